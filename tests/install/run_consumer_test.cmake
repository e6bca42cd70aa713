# ctest feeder_install_consumer: `cmake --install` the build into a temporary prefix, then
# configure, build and run tests/install (find_package(chakraflow), chakraflow::feeder, Chakra's
# header names). Arguments: BUILD_DIR CONSUMER_SOURCE WORK_DIR GENERATOR CXX CXX_FLAGS LINK_FLAGS
# TRACE PROTOC PROTO_FILE.
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

run("cmake --install" "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(f include/chakraflow/compat/et_feeder.h include/chakraflow/compat/et_feeder_node.h
          include/chakraflow/compat/feeder_v3/et_feeder.h
          include/chakraflow/compat/feeder_v3/et_feeder_node.h
          include/chakraflow/astra-sim/extern/graph_frontend/chakra/src/feeder_v3/et_feeder.h
          include/chakraflow/astra-sim/extern/graph_frontend/chakra/src/feeder/et_feeder.h
          include/chakraflow/astra-sim/extern/graph_frontend/chakra/schema/protobuf/et_def.pb.h
          include/chakraflow/proto/et_def.pb.h include/chakraflow/compat/et_def.pb.h)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "not installed: ${prefix}/${f}")
  endif()
endforeach()
# Nothing of the library's insides: no stages/ header.
if(EXISTS "${prefix}/include/chakraflow/stages")
  message(FATAL_ERROR "internal headers installed: ${prefix}/include/chakraflow/stages")
endif()
# The MPI plugin goes where an installed binary looks for it (bin/../lib/chakraflow/).
if(EXISTS "${BUILD_DIR}/libchakraflow_mpi.so" AND
   NOT EXISTS "${prefix}/lib/chakraflow/libchakraflow_mpi.so")
  message(FATAL_ERROR "not installed: ${prefix}/lib/chakraflow/libchakraflow_mpi.so")
endif()
file(GLOB_RECURSE config "${prefix}/*/chakraflowConfig.cmake")
file(GLOB_RECURSE library "${prefix}/*/libchakraflow_feeder.a")
if(NOT config OR NOT library)
  message(FATAL_ERROR "no chakraflowConfig.cmake or libchakraflow_feeder.a under ${prefix}")
endif()

# A simulator's own copy of the schema's generated header, made as ASTRA-sim makes it (protoc on
# et_def.proto from its folder): the consumer includes it beside ours.
get_filename_component(proto_dir "${PROTO_FILE}" DIRECTORY)
file(MAKE_DIRECTORY "${WORK_DIR}/simulator/schema/protobuf")
run("generating the simulator's schema header" "${PROTOC}" "--proto_path=${proto_dir}"
    "--cpp_out=${WORK_DIR}/simulator/schema/protobuf" "${PROTO_FILE}")
run("configuring the consumer" "${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE}" -B "${WORK_DIR}/build"
    "-DSIMULATOR_INCLUDE=${WORK_DIR}/simulator"
    -G "${GENERATOR}" "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX}"
    "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${LINK_FLAGS}"
    -DCMAKE_BUILD_TYPE=)
run("building the consumer" "${CMAKE_COMMAND}" --build "${WORK_DIR}/build")
run("running the consumer" "${WORK_DIR}/build/consumer" "${WORK_DIR}/tiny.et" "${TRACE}")
message(STATUS "consumer output:\n${run_output}")

string(FIND "${run_output}" "tiny: 5 nodes, order 1 2 3 4 0, more 0" at)
if(at EQUAL -1)
  message(FATAL_ERROR "unexpected issue order from the consumer:\n${run_output}")
endif()
if(EXISTS "${TRACE}")
  string(FIND "${run_output}" "chakra.0.et: 3664 nodes" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the consumer did not issue chakra.0.et's 3664 nodes:\n${run_output}")
  endif()
else()
  message(STATUS "*** ${TRACE} is absent: the chakra.0.et part was not run ***")
endif()

run("running both_apis" "${WORK_DIR}/build/both_apis" "${WORK_DIR}/small.et" "${TRACE}")
message(STATUS "both_apis output:\n${run_output}")
string(FIND "${run_output}" "small: v1 40 nodes, v3 40 nodes, runtime 820/820 us, comm 151552/151552 bytes" at)
if(at EQUAL -1)
  message(FATAL_ERROR "both_apis: unexpected walk of the small trace:\n${run_output}")
endif()
if(EXISTS "${TRACE}")
  string(FIND "${run_output}" "chakra.0.et: v1 3664 nodes, v3 3664 nodes" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "both_apis: chakra.0.et not walked fully by both APIs:\n${run_output}")
  endif()
endif()
run("running astra_sim_path" "${WORK_DIR}/build/astra_sim_path" "${WORK_DIR}/small.et")
string(FIND "${run_output}" "master-style: 40 nodes" at)
if(at EQUAL -1)
  message(FATAL_ERROR "astra_sim_path: unexpected output:\n${run_output}")
endif()
# The consumer's link lines: protobuf and zlib, no fmt, simdjson or oneTBB.
file(GLOB_RECURSE link_files "${WORK_DIR}/build/*link.txt" "${WORK_DIR}/build/build.ninja")
foreach(lf ${link_files})
  file(READ "${lf}" text)
  if(text MATCHES "libfmt|libtbb|libsimdjson|-lfmt|-ltbb|-lsimdjson")
    message(FATAL_ERROR "a consumer of chakraflow::feeder links fmt, oneTBB or simdjson: ${lf}")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
