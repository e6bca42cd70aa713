# The simulator benchmark (DLRM tiled to 8, 64, 512 ranks). Included by bench/CMakeLists.txt.
chakraflow_add_bench(simulate_bench SOURCES simulate_bench.cc LIBS chakraflow_pipeline)
