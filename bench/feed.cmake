# The feeder benchmark (own main: it can also write the tiled trace). Included by
# bench/CMakeLists.txt.
add_executable(feeder_bench feeder_bench.cc)
target_link_libraries(feeder_bench PRIVATE chakraflow_feeder benchmark::benchmark)
target_compile_definitions(feeder_bench PRIVATE CHAKRAFLOW_SHARED_DATA="${CHAKRAFLOW_SHARED_DATA}")

# The compatibility feeders (Chakra's old API, FeederV3) as simulators drive them; generates its
# trace with the chakraflow binary.
add_executable(compat_feeder_bench compat_feeder_bench.cc)
target_link_libraries(compat_feeder_bench PRIVATE chakraflow_feeder benchmark::benchmark)
target_compile_definitions(compat_feeder_bench PRIVATE
  CHAKRAFLOW_SHARED_DATA="${CHAKRAFLOW_SHARED_DATA}"
  CHAKRAFLOW_BINARY="$<TARGET_FILE:chakraflow>")
add_dependencies(compat_feeder_bench chakraflow)
