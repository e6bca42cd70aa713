# Benchmarks of the converter and the .et tools. Included by bench/CMakeLists.txt.
chakraflow_add_bench(convert_bench SOURCES convert_bench.cc LIBS chakraflow_convert chakraflow_link)
