# rpcrdma_protobuf_generate(TARGET <target> PROTOS <files...>
#                           [IMPORT_DIRS <dirs...>] [OUT_DIR <dir>])
# Runs protoc with its C++ generator and protoc-gen-rpcrdma over PROTOS
# and adds NAME.pb.{h,cc} and NAME.rpcrdma.pb.{h,cc} to TARGET, whose
# users then include "NAME.rpcrdma.pb.h" (OUT_DIR is on its include path;
# the default is a folder of the current binary directory). IMPORT_DIRS
# are protoc's -I (the default: the current source directory); each proto
# must lie under one of them, and NAME is its path from there. TARGET must
# link rpcrdma::protobuf. Installed with the package: find_package(rpcrdma
# COMPONENTS protobuf) defines it.
function(rpcrdma_protobuf_generate)
  cmake_parse_arguments(G "" "TARGET;OUT_DIR" "PROTOS;IMPORT_DIRS" ${ARGN})
  if(NOT G_TARGET OR NOT G_PROTOS)
    message(FATAL_ERROR "rpcrdma_protobuf_generate needs TARGET and PROTOS")
  endif()
  if(NOT G_IMPORT_DIRS)
    set(G_IMPORT_DIRS ${CMAKE_CURRENT_SOURCE_DIR})
  endif()
  if(NOT G_OUT_DIR)
    set(G_OUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/${G_TARGET}_proto)
  endif()
  if(TARGET protoc-gen-rpcrdma)
    set(plugin $<TARGET_FILE:protoc-gen-rpcrdma>)
    set(runtime rpcrdma_protobuf)
  else()
    set(plugin $<TARGET_FILE:rpcrdma::protoc-gen-rpcrdma>)
    set(runtime rpcrdma::protobuf)
  endif()
  # The runtime's include folders come after IMPORT_DIRS, so that a proto
  # may import "rpcrdma/protobuf/options.proto".
  set(runtime_includes
      "-I$<JOIN:$<TARGET_PROPERTY:${runtime},INTERFACE_INCLUDE_DIRECTORIES>,$<SEMICOLON>-I>")
  set(includes)
  foreach(dir ${G_IMPORT_DIRS})
    get_filename_component(dir ${dir} ABSOLUTE)
    list(APPEND includes -I ${dir})
  endforeach()
  file(MAKE_DIRECTORY ${G_OUT_DIR})
  foreach(proto ${G_PROTOS})
    get_filename_component(proto ${proto} ABSOLUTE)
    set(relative)
    foreach(dir ${G_IMPORT_DIRS})
      get_filename_component(dir ${dir} ABSOLUTE)
      file(RELATIVE_PATH candidate ${dir} ${proto})
      if(NOT candidate MATCHES "^\\.\\./")
        set(relative ${candidate})
        break()
      endif()
    endforeach()
    if(NOT relative)
      message(FATAL_ERROR "${proto} lies under none of IMPORT_DIRS "
                          "(${G_IMPORT_DIRS})")
    endif()
    string(REGEX REPLACE "\\.proto$" "" base ${relative})
    set(outputs ${G_OUT_DIR}/${base}.pb.h ${G_OUT_DIR}/${base}.pb.cc
                ${G_OUT_DIR}/${base}.rpcrdma.pb.h
                ${G_OUT_DIR}/${base}.rpcrdma.pb.cc)
    add_custom_command(
      OUTPUT ${outputs}
      COMMAND protobuf::protoc --cpp_out=${G_OUT_DIR}
              --plugin=protoc-gen-rpcrdma=${plugin}
              --rpcrdma_out=${G_OUT_DIR} ${includes} ${runtime_includes}
              ${proto}
      DEPENDS ${proto} ${plugin} protobuf::protoc
      COMMENT "protoc with protoc-gen-rpcrdma on ${relative}"
      VERBATIM COMMAND_EXPAND_LISTS)
    # protoc's own output is not ours to keep warning-free; ours is.
    set_source_files_properties(${G_OUT_DIR}/${base}.pb.cc
                                PROPERTIES COMPILE_OPTIONS -w)
    target_sources(${G_TARGET} PRIVATE ${outputs})
  endforeach()
  target_include_directories(${G_TARGET} PUBLIC ${G_OUT_DIR})
endfunction()
