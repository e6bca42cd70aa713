# The feeder benchmark (own main: it can also write the tiled trace). Included by
# bench/CMakeLists.txt.
add_executable(feeder_bench feeder_bench.cc)
target_link_libraries(feeder_bench PRIVATE chakraflow_feeder benchmark::benchmark)
target_compile_definitions(feeder_bench PRIVATE CHAKRAFLOW_SHARED_DATA="${CHAKRAFLOW_SHARED_DATA}")
