# chakraflow_sim: the multi-rank simulator (`chakraflow simulate`): its configuration, cost model,
# per-rank engine, communication matching, reports and timeline are plain C++; simulator.cc, the
# multi-rank driver, runs the ranks in parallel with oneTBB. Included by stages/CMakeLists.txt.
add_library(chakraflow_sim STATIC
  sim_config.cc
  simulator_cost.cc
  simulator_node.cc
  simulator_rank.cc
  simulator_comm.cc
  simulator_report.cc
  simulator_timeline.cc
  simulator.cc
)
target_link_libraries(chakraflow_sim PUBLIC chakraflow_feeder chakraflow_core yaml-cpp TBB::tbb)
