# The simulator's tests (`chakraflow simulate`). Included by tests/CMakeLists.txt.
#
# Like chakraflow_add_test, with a 60 s timeout per test instead of 300 s: the stall tests must
# end with a report, and a hang must fail fast (the simulator also bounds its rounds internally).
add_executable(simulator_test
  stages/simulator_test.cc
  golden/simulate_golden_test.cc)
target_link_libraries(simulator_test PRIVATE
  chakraflow_pipeline chakraflow_testing GTest::gmock GTest::gtest GTest::gtest_main)
target_compile_definitions(simulator_test PRIVATE
  CHAKRAFLOW_SHARED_DATA="${CHAKRAFLOW_SHARED_DATA}"
  CHAKRAFLOW_BINARY="$<TARGET_FILE:chakraflow>"
  CHAKRAFLOW_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
# The golden tests run the chakraflow binary.
add_dependencies(simulator_test chakraflow)
gtest_discover_tests(simulator_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60)
