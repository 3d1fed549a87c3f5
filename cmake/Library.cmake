# The one library consumers link: rpcrdma (shared, SONAME librpcrdma.so.1)
# and rpcrdma_static (librpcrdma.a), made of the objects of the layer
# libraries (plugin/*) that rpcrdma_api links, found by walking its link
# graph so that a new layer joins by being linked. The layers stay static
# libraries of their own, so that tests and tools link just what they test.

# rpcrdma_collect_link_graph(<target>): appends the rpcrdma_* static
# libraries <target> links (itself included) to RPCRDMA_LAYERS and every
# other link item to RPCRDMA_LAYER_DEPS, both in the caller's scope.
function(rpcrdma_collect_link_graph target)
  set(layers ${RPCRDMA_LAYERS})
  set(deps ${RPCRDMA_LAYER_DEPS})
  set(pending ${target})
  while(pending)
    list(POP_FRONT pending item)
    if(item IN_LIST layers)
      continue()
    endif()
    list(APPEND layers ${item})
    get_target_property(links ${item} LINK_LIBRARIES)
    if(NOT links)
      continue()
    endif()
    foreach(link IN LISTS links)
      if(TARGET ${link} AND link MATCHES "^rpcrdma_")
        get_target_property(type ${link} TYPE)
        if(NOT type STREQUAL "STATIC_LIBRARY")
          message(FATAL_ERROR "${item} links ${link}, a ${type}; layers of "
                              "the rpcrdma library are static libraries")
        endif()
        list(APPEND pending ${link})
      elseif(NOT link IN_LIST deps)
        list(APPEND deps ${link})
      endif()
    endforeach()
  endwhile()
  set(RPCRDMA_LAYERS ${layers} PARENT_SCOPE)
  set(RPCRDMA_LAYER_DEPS ${deps} PARENT_SCOPE)
endfunction()

set(RPCRDMA_LAYERS)
set(RPCRDMA_LAYER_DEPS)
rpcrdma_collect_link_graph(rpcrdma_api)
set(rpcrdma_objects)
foreach(layer IN LISTS RPCRDMA_LAYERS)
  list(APPEND rpcrdma_objects $<TARGET_OBJECTS:${layer}>)
endforeach()

# What the public headers (plugin/include/rpcrdma, rpcrdma/config.pb.h)
# need from a consumer's compiler and linker.
set(RPCRDMA_PUBLIC_DEPS absl::status absl::statusor absl::span absl::strings
                        protobuf::libprotobuf)
set(rpcrdma_public_include_dirs
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/plugin/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/plugin/proto>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

add_library(rpcrdma SHARED ${rpcrdma_objects})
set_target_properties(rpcrdma PROPERTIES VERSION ${PROJECT_VERSION}
                                         SOVERSION ${RPCRDMA_ABI_VERSION}
                                         EXPORT_NAME rpcrdma)
target_include_directories(rpcrdma INTERFACE ${rpcrdma_public_include_dirs})
target_link_libraries(rpcrdma PUBLIC ${RPCRDMA_PUBLIC_DEPS}
                              PRIVATE ${RPCRDMA_LAYER_DEPS})
target_compile_features(rpcrdma INTERFACE cxx_std_20)
# Every symbol resolved at link time (the sanitizers' runtimes are linked
# into executables only, so not with them).
if(NOT RPCRDMA_SANITIZE)
  target_link_options(rpcrdma PRIVATE LINKER:--no-undefined)
endif()

# The archive carries no dependencies of its own: its consumer links them
# all (INTERFACE here, Requires.private/Libs.private in rpcrdma.pc).
add_library(rpcrdma_static STATIC ${rpcrdma_objects})
set_target_properties(rpcrdma_static PROPERTIES OUTPUT_NAME rpcrdma
                                                EXPORT_NAME rpcrdma_static)
target_include_directories(rpcrdma_static
                           INTERFACE ${rpcrdma_public_include_dirs})
target_link_libraries(rpcrdma_static INTERFACE ${RPCRDMA_PUBLIC_DEPS}
                                               ${RPCRDMA_LAYER_DEPS})
target_compile_features(rpcrdma_static INTERFACE cxx_std_20)

# For projects that add rpcrdma with add_subdirectory or FetchContent: the
# same names find_package(rpcrdma) gives.
add_library(rpcrdma::rpcrdma ALIAS rpcrdma)
add_library(rpcrdma::rpcrdma_static ALIAS rpcrdma_static)
