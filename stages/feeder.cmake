# chakraflow_feeder: the windowed, dependency-resolving feeder (et_feeder), the static-graph index
# (et_index), its multi-rank driver on oneTBB (multi_feeder) and the compatibility layers for
# simulators written against Chakra's feeders: Chakra::ETFeeder (compat/) and
# Chakra::FeederV3::ETFeeder (compat/feeder_v3/). Included by stages/CMakeLists.txt.
#
# Two libraries:
# - chakraflow_feeder, used in this build (pipeline, tests, benchmarks), links like every stage;
# - chakraflow_feeder_dist is what `cmake --install` ships as chakraflow::feeder: one
#   self-contained static library (the feeders, .et reading, the generated schema) whose users
#   link only protobuf and zlib. Its objects are compiled apart, with fmt header-only and without
#   oneTBB (no multi_feeder), so that neither reaches a simulator's build.
set(CHAKRAFLOW_FEEDER_SOURCES
  et_feeder.cc
  et_index.cc
  compat/et_feeder.cc
  compat/et_feeder_node.cc
  compat/feeder_v3/et_feeder.cc
  compat/feeder_v3/et_feeder_node.cc
)
add_library(chakraflow_feeder STATIC ${CHAKRAFLOW_FEEDER_SOURCES} multi_feeder.cc)
target_link_libraries(chakraflow_feeder PUBLIC chakraflow_convert chakraflow_proto fmt::fmt TBB::tbb)

add_library(chakraflow_feeder_dist_objects OBJECT ${CHAKRAFLOW_FEEDER_SOURCES}
  compat/node_record.cc et_io.cc file_io.cc)
target_include_directories(chakraflow_feeder_dist_objects PRIVATE ${CMAKE_SOURCE_DIR})
target_link_libraries(chakraflow_feeder_dist_objects PRIVATE chakraflow_proto fmt::fmt-header-only
                      ZLIB::ZLIB)
add_library(chakraflow_feeder_dist STATIC
  $<TARGET_OBJECTS:chakraflow_feeder_dist_objects>
  $<TARGET_OBJECTS:chakraflow_proto>
)
set_target_properties(chakraflow_feeder_dist PROPERTIES
  OUTPUT_NAME chakraflow_feeder
  ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/dist
  EXPORT_NAME feeder)
target_include_directories(chakraflow_feeder_dist
  INTERFACE
    $<INSTALL_INTERFACE:include>
    $<INSTALL_INTERFACE:include/chakraflow>
    $<INSTALL_INTERFACE:include/chakraflow/compat>)
target_link_libraries(chakraflow_feeder_dist PUBLIC protobuf::libprotobuf ZLIB::ZLIB Threads::Threads)

include(CMakePackageConfigHelpers)
include(GNUInstallDirs)
set(CHAKRAFLOW_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/chakraflow)
install(TARGETS chakraflow_feeder_dist EXPORT chakraflowTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# Only the compatibility headers are installed: they include nothing of ours but each other and the
# schema (no stages/ header, no fmt, simdjson or oneTBB).
install(FILES compat/et_feeder.h compat/et_feeder_node.h DESTINATION include/chakraflow/compat)
install(FILES compat/feeder_v3/common.h compat/feeder_v3/dependancy_solver.h
              compat/feeder_v3/et_feeder.h compat/feeder_v3/et_feeder_node.h
        DESTINATION include/chakraflow/compat/feeder_v3)
# The paths ASTRA-sim includes Chakra's feeders and schema by, from its source root
# (docs/astra-sim.md): headers that forward to ours.
install(DIRECTORY compat/astra_sim/
        DESTINATION include/chakraflow/astra-sim/extern/graph_frontend/chakra)
install(FILES ${CMAKE_BINARY_DIR}/proto/et_def.pb.h DESTINATION include/chakraflow/proto)
# Also under Chakra's header name, beside the compat headers (on the include path of
# chakraflow::feeder): a simulator includes "et_def.pb.h" and gets this one, and links only ours.
install(FILES ${CMAKE_BINARY_DIR}/proto/et_def.pb.h DESTINATION include/chakraflow/compat)
install(EXPORT chakraflowTargets NAMESPACE chakraflow:: DESTINATION ${CHAKRAFLOW_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/chakraflowConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/chakraflowConfig.cmake
  INSTALL_DESTINATION ${CHAKRAFLOW_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/chakraflowConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_BINARY_DIR}/cmake/chakraflowConfig.cmake
  ${CMAKE_BINARY_DIR}/cmake/chakraflowConfigVersion.cmake
  DESTINATION ${CHAKRAFLOW_CMAKE_DIR})
