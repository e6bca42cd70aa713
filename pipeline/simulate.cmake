# `chakraflow simulate`: multi-rank replay simulation. Included by pipeline/CMakeLists.txt.
target_sources(chakraflow_pipeline PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/simulate_command.cc)
target_link_libraries(chakraflow_pipeline PUBLIC chakraflow_sim)
