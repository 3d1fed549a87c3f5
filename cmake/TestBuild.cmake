# How the test programs are compiled. They are most of the tree's compile
# units, and most of each unit's time went to the same headers (GoogleTest,
# GoogleMock, abseil, the standard library) and, at -O2, to optimising
# GoogleTest's macro expansions. Two measures, neither of which changes
# what a test checks:
#
# - One precompiled header for every GoogleTest program, built once
#   (rpcrdma_test_pch) and reused by each (REUSE_FROM). Clang and GCC accept
#   the extra definitions a test target adds (clang takes them as
#   predefines; GCC falls back to the plain headers when a PCH does not
#   fit), so a target compiles either way.
# - RPCRDMA_TEST_CODE_OPTIMIZATION: the optimisation of the test programs'
#   own units. The libraries under test keep the build type's (-O2 in the
#   default RelWithDebInfo build). Clang's diagnostics do not depend on the
#   optimiser, so its builds compile test code at -O0 (half the time);
#   GCC's -O2-only warnings (flow analysis) stay on for GCC builds, which
#   keep the build type's level.
#
# Applied after the test directories are read, to every executable there
# that links GoogleTest, so a new test needs nothing extra.
option(RPCRDMA_TEST_PCH "Precompile the headers of the GoogleTest programs"
       ON)
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(rpcrdma_test_opt_default "-O0")
else()
  set(rpcrdma_test_opt_default "")
endif()
set(RPCRDMA_TEST_CODE_OPTIMIZATION "${rpcrdma_test_opt_default}" CACHE STRING
    "Optimisation flag for the test programs' own units (empty: the build type's)")

set(rpcrdma_test_pch_headers
    <algorithm> <atomic> <chrono> <condition_variable> <cstdint> <cstring>
    <functional> <future> <map> <memory> <mutex> <optional> <string>
    <thread> <vector>
    <absl/status/status.h> <absl/status/statusor.h> <absl/strings/match.h>
    <absl/strings/str_cat.h> <absl/types/span.h>
    <gmock/gmock.h> <gtest/gtest.h>)

# Every target defined in DIR and below it.
function(rpcrdma_targets_below dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    rpcrdma_targets_below(${sub} sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# rpcrdma_speed_up_test_builds(<dir>...): the measures above for the
# GoogleTest executables under each directory.
function(rpcrdma_speed_up_test_builds)
  if(RPCRDMA_TEST_PCH AND NOT TARGET rpcrdma_test_pch)
    # The PCH's flags must be those of the executables that reuse it:
    # position-independent executable code (-fPIE, not a library's -fPIC),
    # the same optimisation, GoogleTest's definitions.
    add_library(rpcrdma_test_pch OBJECT
                ${PROJECT_SOURCE_DIR}/tests/testing/test_pch.cc)
    set_target_properties(rpcrdma_test_pch PROPERTIES
                          POSITION_INDEPENDENT_CODE OFF)
    target_compile_options(rpcrdma_test_pch PRIVATE -fPIE
                           ${RPCRDMA_TEST_CODE_OPTIMIZATION})
    target_link_libraries(rpcrdma_test_pch PRIVATE absl::status absl::strings
                          GTest::gmock GTest::gtest)
    target_precompile_headers(rpcrdma_test_pch PRIVATE
                              ${rpcrdma_test_pch_headers})
    # ccache caches a clang PCH only without its embedded timestamp.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
      target_compile_options(rpcrdma_test_pch PRIVATE
                             "SHELL:-Xclang -fno-pch-timestamp")
    endif()
  endif()
  foreach(dir IN LISTS ARGN)
    rpcrdma_targets_below(${dir} targets)
    foreach(target IN LISTS targets)
      get_target_property(type ${target} TYPE)
      get_target_property(libs ${target} LINK_LIBRARIES)
      if(NOT type STREQUAL "EXECUTABLE" OR NOT libs MATCHES "GTest::")
        continue()
      endif()
      if(RPCRDMA_TEST_CODE_OPTIMIZATION)
        target_compile_options(${target} PRIVATE
                               ${RPCRDMA_TEST_CODE_OPTIMIZATION})
      endif()
      if(RPCRDMA_TEST_PCH)
        target_precompile_headers(${target} REUSE_FROM rpcrdma_test_pch)
      endif()
    endforeach()
  endforeach()
endfunction()
