# Project-wide compile flags. Warnings are errors when RPCRDMA_WERROR is on
# (the Makefile and CI turn it on; consumers get warnings only).
add_compile_options(-Wall -Wextra -Wpedantic -Wshadow -Wconversion
                    -Wno-sign-conversion
                    $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>)
if(RPCRDMA_WERROR)
  add_compile_options(-Werror)
endif()
# GCC 12 at -O3 reports values moved between slots of Abseil's flat hash
# maps during a rehash as maybe uninitialized (std::variant members of the
# engine's call state): a known false positive of its flow analysis, which
# Abseil's own build turns off for GCC as well.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  add_compile_options(-Wno-maybe-uninitialized)
endif()
# libtirpc declares xdr_void without parameters, and C programs pass it as
# the variadic xdrproc_t through a cast, as rpcgen's own output does: GCC's
# -Wextra calls that cast incompatible in C. The ONC RPC adapter's promise
# is that such programs build unchanged.
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  add_compile_options($<$<COMPILE_LANGUAGE:C>:-Wno-cast-function-type>)
endif()

if(RPCRDMA_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
  # C programs that link the C++ libraries (the ONC RPC adapter's C
  # consumers and examples) need UBSan's C++ runtime too (the libraries'
  # vptr checks), and the C++ library it uses, which the C driver leaves
  # out.
  if(CMAKE_C_COMPILER_ID STREQUAL "Clang")
    add_link_options($<$<LINK_LANGUAGE:C>:-fsanitize-link-c++-runtime>)
    string(APPEND CMAKE_C_STANDARD_LIBRARIES " -lstdc++")
  endif()
endif()

set(RPCRDMA_CAN_FUZZ OFF)
if(RPCRDMA_BUILD_TESTS AND RPCRDMA_FUZZ AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(RPCRDMA_CAN_FUZZ ON)
endif()
# The compile options of a fuzz target's coverage-instrumented libraries
# (the *_cov targets); rpcrdma_add_fuzzer gives its target the same
# optimisation. A Debug build (make test-sanitize's) is optimised at -O1
# for them, as OSS-Fuzz builds fuzz targets: unoptimised, every inline
# function of the standard library, Abseil and nlohmann/json is a call of
# its own with its own instrumented edges, which made the targets run
# several times slower and gave libFuzzer tens of thousands of features to
# book per input. What the targets exercise is unchanged; the sanitizers
# check the same accesses.
option(RPCRDMA_FUZZ_OPTIMIZE
       "Optimise fuzz targets at -O1 in Debug builds (OFF: -O0, to step through one)"
       ON)
set(RPCRDMA_FUZZ_OPTIMIZATION "")
if(RPCRDMA_FUZZ_OPTIMIZE)
  set(RPCRDMA_FUZZ_OPTIMIZATION $<$<CONFIG:Debug>:-O1>)
endif()
# Coverage is also left out of the libraries' own code inlined into ours
# (tests/fuzz/coverage_ignorelist.txt: the standard library, Abseil,
# nlohmann/json). Their branches are not what we fuzz, yet they were most
# of the features libFuzzer booked per input; the sanitizers still check
# every access they make. ccache does not hash that file: after editing
# it, rebuild the fuzz targets with CCACHE_RECACHE=1.
set(RPCRDMA_FUZZ_IGNORELIST
    -fsanitize-coverage-ignorelist=${PROJECT_SOURCE_DIR}/tests/fuzz/coverage_ignorelist.txt)
set(RPCRDMA_FUZZ_COVERAGE_OPTIONS -fsanitize=fuzzer-no-link
                                  ${RPCRDMA_FUZZ_OPTIMIZATION}
                                  ${RPCRDMA_FUZZ_IGNORELIST})
