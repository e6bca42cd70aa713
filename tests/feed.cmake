# The feeder's tests. Included by tests/CMakeLists.txt.
chakraflow_add_test(feeder_test
  SOURCES
    stages/et_feeder_test.cc
    stages/multi_feeder_test.cc
    stages/compat_feeder_test.cc
    stages/feeder_v3_test.cc
    golden/feeder_golden_test.cc
  LIBS chakraflow_feeder chakraflow_testing GTest::gmock)
# The CLI tests run the chakraflow binary.
add_dependencies(feeder_test chakraflow)

# Install the project into a temporary prefix, then build and run a small program written against
# Chakra's feeder API with find_package(chakraflow) (tests/install/), as a simulator would. The
# consumer is compiled with this build's flags (sanitizers included).
string(TOUPPER "${CMAKE_BUILD_TYPE}" _cf_build_type)
add_test(NAME feeder_install_consumer
  COMMAND ${CMAKE_COMMAND}
    -DBUILD_DIR=${CMAKE_BINARY_DIR}
    -DCONSUMER_SOURCE=${CMAKE_CURRENT_SOURCE_DIR}/install
    -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/feeder_install_consumer
    -DGENERATOR=${CMAKE_GENERATOR}
    -DCXX=${CMAKE_CXX_COMPILER}
    "-DCXX_FLAGS=${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_cf_build_type}}"
    "-DLINK_FLAGS=${CMAKE_EXE_LINKER_FLAGS} ${CMAKE_EXE_LINKER_FLAGS_${_cf_build_type}}"
    -DTRACE=${CHAKRAFLOW_SHARED_DATA}/chakra_et/resnet_ddp_rank0/chakra.0.et
    -DPROTOC=$<TARGET_FILE:protobuf::protoc>
    -DPROTO_FILE=${CMAKE_SOURCE_DIR}/proto/et_def.proto
    -P ${CMAKE_CURRENT_SOURCE_DIR}/install/run_consumer_test.cmake)
set_tests_properties(feeder_install_consumer PROPERTIES TIMEOUT 300)
