# `chakraflow feed`: issue a .et trace through the feeder. Included by pipeline/CMakeLists.txt.
target_sources(chakraflow_pipeline PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/feed_command.cc)
target_link_libraries(chakraflow_pipeline PUBLIC chakraflow_feeder)
