# `chakraflow convert` (chakra_converter) and `chakraflow jsonize` (chakra_jsonizer). Included by
# pipeline/CMakeLists.txt.
target_sources(chakraflow_pipeline PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/convert_command.cc
                                           ${CMAKE_CURRENT_SOURCE_DIR}/comm_group_file.cc)
target_link_libraries(chakraflow_pipeline PUBLIC chakraflow_convert)
