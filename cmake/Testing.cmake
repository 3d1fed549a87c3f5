# rpcrdma_add_test(NAME <name> SOURCES <files...> LIBS <targets...>
#                  LABELS <labels...>)
# A GoogleTest binary whose tests carry the given ctest labels.
function(rpcrdma_add_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gmock GTest::gtest
                                          GTest::gtest_main)
  gtest_discover_tests(${T_NAME} DISCOVERY_MODE PRE_TEST)
  # Labels are set after discovery, from the list of tests it makes:
  # gtest_discover_tests' PROPERTIES would flatten a list of labels.
  set(labels_file ${CMAKE_CURRENT_BINARY_DIR}/${T_NAME}_labels.cmake)
  file(WRITE ${labels_file}
       "if(${T_NAME}_TESTS)\n"
       "  set_tests_properties(\${${T_NAME}_TESTS} PROPERTIES LABELS \"${T_LABELS}\")\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${labels_file})
endfunction()

# rpcrdma_add_fuzzer(NAME <name> SOURCES <files...> LIBS <targets...>
#                    SEEDS <dir>)
# A libFuzzer target (clang only) plus a short smoke run labelled `fuzz`.
# Link the coverage-instrumented variants of the libraries under test
# (the *_cov targets) so the fuzzer sees their branches.
set(RPCRDMA_FUZZ_SMOKE_SECONDS 10 CACHE STRING
    "Seconds each fuzz smoke test runs under ctest")
function(rpcrdma_add_fuzzer)
  cmake_parse_arguments(F "" "NAME;SEEDS" "SOURCES;LIBS" ${ARGN})
  if(NOT RPCRDMA_CAN_FUZZ)
    return()
  endif()
  add_executable(${F_NAME} ${F_SOURCES})
  target_compile_options(${F_NAME} PRIVATE -fsanitize=fuzzer
                                           ${RPCRDMA_FUZZ_OPTIMIZATION}
                                           ${RPCRDMA_FUZZ_IGNORELIST})
  target_link_options(${F_NAME} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(${F_NAME} PRIVATE ${F_LIBS})
  set(corpus ${CMAKE_CURRENT_BINARY_DIR}/${F_NAME}_corpus)
  add_test(NAME ${F_NAME}.smoke
           COMMAND sh -c "mkdir -p '${corpus}' && exec \"$0\" -max_total_time=${RPCRDMA_FUZZ_SMOKE_SECONDS} -print_final_stats=1 '${corpus}' '${F_SEEDS}'"
                   $<TARGET_FILE:${F_NAME}>)
  set_tests_properties(${F_NAME}.smoke PROPERTIES LABELS fuzz)
endfunction()
