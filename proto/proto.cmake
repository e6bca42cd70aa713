# chakraflow_proto: the Chakra schema (et_def.proto) and its protoc-generated C++ code.
# Generated into ${CMAKE_BINARY_DIR}/proto/, included as "proto/et_def.pb.h" (and, installed, as
# Chakra's "et_def.pb.h"). Compiled as "et_def.proto" from its own folder, as Chakra and ASTRA-sim
# compile theirs: the header's include guard and the descriptor's file name are then the same as
# in a simulator's own generated header, so that a file including both sees one definition.
set(CHAKRAFLOW_PROTO_OUT ${CMAKE_BINARY_DIR}/proto)
file(MAKE_DIRECTORY ${CHAKRAFLOW_PROTO_OUT})
add_custom_command(
  OUTPUT ${CHAKRAFLOW_PROTO_OUT}/et_def.pb.h ${CHAKRAFLOW_PROTO_OUT}/et_def.pb.cc
  COMMAND protobuf::protoc
    --proto_path=${CMAKE_SOURCE_DIR}/proto
    --cpp_out=${CHAKRAFLOW_PROTO_OUT}
    ${CMAKE_SOURCE_DIR}/proto/et_def.proto
  DEPENDS ${CMAKE_SOURCE_DIR}/proto/et_def.proto protobuf::protoc
  COMMENT "protoc: generating C++ code for proto/et_def.proto"
  VERBATIM)

add_library(chakraflow_proto STATIC ${CHAKRAFLOW_PROTO_OUT}/et_def.pb.cc)
# The generated code is not ours: compile it without the project's warnings-as-errors, and expose
# its headers as system headers so that including them does not trip -Wpedantic in our code.
target_compile_options(chakraflow_proto PRIVATE -w)
target_include_directories(chakraflow_proto SYSTEM PUBLIC ${CMAKE_BINARY_DIR})
# The generated source includes its header by its own name.
target_include_directories(chakraflow_proto SYSTEM PRIVATE ${CHAKRAFLOW_PROTO_OUT})
target_link_libraries(chakraflow_proto PUBLIC protobuf::libprotobuf)
# Where the schema lives, for tests that decode with protoc against it.
set(CHAKRAFLOW_PROTO_FILE ${CMAKE_SOURCE_DIR}/proto/et_def.proto CACHE INTERNAL "")
