# ctest demo_build_covers_install: a build made as scripts/demo.sh makes it (`cmake --build build
# --target T...`) can be installed. Every file that `cmake --install` copies out of the build tree
# and that the build makes (a Ninja output: a library, the binary, a generated header) must be one
# of the demo's targets or among their inputs, else `cmake --install` after the demo fails on the
# missing file. Read from the build's own files, nothing is built. Arguments: BUILD_DIR
# DEMO_SCRIPT NINJA.
cmake_minimum_required(VERSION 3.22)

function(run out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(JOIN " " cmd ${ARGN})
    message(FATAL_ERROR "${cmd} failed (${rc}):\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

# The demo's build command and the targets it names (none: the default target, everything).
file(STRINGS "${DEMO_SCRIPT}" build_lines REGEX "^[ \t]*cmake[ \t]+--build[ \t]")
list(LENGTH build_lines n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one `cmake --build` line in ${DEMO_SCRIPT}, found ${n}")
endif()
if(build_lines MATCHES "--target[ \t=]+([^;#|&]*)")
  string(STRIP "${CMAKE_MATCH_1}" targets)
  string(REGEX REPLACE "[ \t]+" ";" targets "${targets}")
else()
  set(targets all)
endif()
message(STATUS "demo builds: ${targets}")

# What the build makes: every Ninja output, relative to the build folder.
run(listing "${NINJA}" -C "${BUILD_DIR}" -t targets all)
string(REGEX MATCHALL "[^\n]+:[^\n]*" rows "${listing}")
set(outputs "")
foreach(row IN LISTS rows)
  string(REGEX REPLACE ": [^:]*$" "" path "${row}")
  list(APPEND outputs "${path}")
endforeach()

# What the demo's build runs: every command that makes its targets and what they are built from.
run(demo_commands "${NINJA}" -C "${BUILD_DIR}" -t commands ${targets})
set(demo_commands "\n${demo_commands}")

# What `cmake --install` copies from the build tree: the build-tree paths in the install scripts
# (file(INSTALL ... FILES ...)); those that no rule of the build makes (configure-time files, the
# install scripts themselves) exist without any build.
file(GLOB_RECURSE scripts "${BUILD_DIR}/cmake_install.cmake")
set(needed "")
foreach(script IN LISTS scripts)
  file(READ "${script}" text)
  string(REGEX MATCHALL "file\\(INSTALL [^)]*\\)" installs "${text}")
  foreach(install IN LISTS installs)
    string(REGEX MATCHALL "\"[^\"]+\"" paths "${install}")
    foreach(path IN LISTS paths)
      string(REPLACE "\"" "" path "${path}")
      string(FIND "${path}" "${BUILD_DIR}/" at)
      if(NOT at EQUAL 0)
        continue()
      endif()
      file(RELATIVE_PATH path "${BUILD_DIR}" "${path}")
      if(path IN_LIST outputs)
        list(APPEND needed "${path}")
      endif()
    endforeach()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES needed)
if(NOT needed)
  message(FATAL_ERROR "no installed file made by the build found in ${BUILD_DIR}/cmake_install.cmake")
endif()

# A file is built by the demo when the command that makes it is among the demo's (the command of a
# rule with several outputs, such as protoc's .pb.cc and .pb.h, makes them all).
set(missing "")
foreach(path IN LISTS needed)
  run(command "${NINJA}" -C "${BUILD_DIR}" -t commands -s "${path}")
  string(FIND "${demo_commands}" "\n${command}" at)
  if(at EQUAL -1)
    list(APPEND missing "${path}")
  endif()
endforeach()
if(missing)
  string(REPLACE ";" "\n  " missing "${missing}")
  message(FATAL_ERROR "`cmake --install` after scripts/demo.sh's build (--target ${targets}) would "
                      "miss what it does not build:\n  ${missing}\nAdd their targets to "
                      "chakraflow_dist (CMakeLists.txt).")
endif()
string(REPLACE ";" ", " needed "${needed}")
message(STATUS "the demo's build makes every installed file the build makes: ${needed}")
