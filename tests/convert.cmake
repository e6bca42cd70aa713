# Tests of the Chakra protobuf side: .et I/O, Python repr, the converter stages, and golden tests
# against Chakra 1.0.0's outputs in ../shared/data. Included by tests/CMakeLists.txt.
chakraflow_add_test(convert_stages_test
  SOURCES
    stages/et_io_test.cc
    stages/python_repr_test.cc
    stages/pytorch_converter_test.cc
    stages/comm_groups_test.cc
  LIBS chakraflow_convert chakraflow_testing)

chakraflow_add_test(convert_golden_test
  SOURCES golden/convert_golden_test.cc
  LIBS chakraflow_convert chakraflow_pipeline chakraflow_testing)
# The CLI tests run the chakraflow binary.
add_dependencies(convert_golden_test chakraflow)

chakraflow_add_test(linked_convert_test
  SOURCES golden/linked_convert_test.cc
  LIBS chakraflow_convert chakraflow_pipeline chakraflow_testing)
add_dependencies(linked_convert_test chakraflow)
