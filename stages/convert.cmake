# chakraflow_convert: the Chakra protobuf side: .et I/O, lazily decoded node records, the
# PyTorch → Chakra converter stages, the communicator groups of converted ranks and the jsonizer. Included by stages/CMakeLists.txt.
add_library(chakraflow_convert STATIC
  python_repr.cc
  et_io.cc
  jsonizer.cc
  et_plus_nodes.cc
  comm_attributes.cc
  dependency_encoding.cc
  cycle_check.cc
  pytorch_converter.cc
  comm_groups.cc
  compat/node_record.cc
)
target_link_libraries(chakraflow_convert PUBLIC chakraflow_link chakraflow_proto)
