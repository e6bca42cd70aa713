# chakraflow_feeder: the windowed, dependency-resolving feeder (et_feeder), its multi-rank driver on
# oneTBB (multi_feeder) and the Chakra::ETFeeder compatibility layer (compat/). Included by
# stages/CMakeLists.txt.
#
# Two libraries share the same objects:
# - chakraflow_feeder, used in this build (pipeline, tests, benchmarks), gets EtReader and the
#   generated schema from chakraflow_convert / chakraflow_proto like every other stage;
# - chakraflow_feeder_dist is what `cmake --install` ships as chakraflow::feeder: one
#   self-contained static library (the feeder, .et reading, the generated schema) with relocatable
#   usage requirements, so that a simulator links it alone after find_package(chakraflow).
add_library(chakraflow_feeder_objects OBJECT
  et_feeder.cc
  multi_feeder.cc
  compat/et_feeder.cc
  compat/et_feeder_node.cc
)
target_link_libraries(chakraflow_feeder_objects PUBLIC chakraflow_proto fmt::fmt TBB::tbb)

add_library(chakraflow_feeder STATIC $<TARGET_OBJECTS:chakraflow_feeder_objects>)
target_link_libraries(chakraflow_feeder PUBLIC chakraflow_convert chakraflow_proto TBB::tbb)

add_library(chakraflow_feeder_dist STATIC
  $<TARGET_OBJECTS:chakraflow_feeder_objects>
  $<TARGET_OBJECTS:chakraflow_proto>
  et_io.cc
  file_io.cc
)
set_target_properties(chakraflow_feeder_dist PROPERTIES
  OUTPUT_NAME chakraflow_feeder
  ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/dist
  EXPORT_NAME feeder)
target_include_directories(chakraflow_feeder_dist
  PRIVATE ${CMAKE_SOURCE_DIR}
  INTERFACE
    $<INSTALL_INTERFACE:include>
    $<INSTALL_INTERFACE:include/chakraflow>
    $<INSTALL_INTERFACE:include/chakraflow/compat>)
target_include_directories(chakraflow_feeder_dist SYSTEM PRIVATE ${CMAKE_BINARY_DIR})
target_link_libraries(chakraflow_feeder_dist PUBLIC
  protobuf::libprotobuf fmt::fmt TBB::tbb ZLIB::ZLIB Threads::Threads)

include(CMakePackageConfigHelpers)
include(GNUInstallDirs)
set(CHAKRAFLOW_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/chakraflow)
install(TARGETS chakraflow_feeder_dist EXPORT chakraflowTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES et_feeder.h multi_feeder.h status.h DESTINATION include/chakraflow/stages)
install(FILES compat/et_feeder.h compat/et_feeder_node.h DESTINATION include/chakraflow/compat)
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
