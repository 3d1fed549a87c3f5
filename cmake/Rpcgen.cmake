# rpcrdma_rpcgen(NAME <library> X <file.x> [MT] [CLIENT] [SERVER])
# A static library of what rpcgen (Debian's rpcsvc-proto) generates from
# <file.x>: the header <name of file.x>.h and the XDR routines, plus, with
# CLIENT, the client stubs (*_clnt.c) and, with SERVER, the dispatcher
# without a main (*_svc.c, rpcgen -m). MT generates the multithread-safe
# style (rpcgen -M: results passed by the caller), which a server
# dispatching on several threads needs. The header is included by its
# plain name; the code is compiled as C against libtirpc, as rpcgen
# programs are, and is not held to our warnings.
find_program(RPCGEN_EXECUTABLE rpcgen REQUIRED)

function(rpcrdma_rpcgen)
  cmake_parse_arguments(R "MT;CLIENT;SERVER" "NAME;X" "" ${ARGN})
  get_filename_component(base ${R_X} NAME_WE)
  get_filename_component(x ${R_X} ABSOLUTE)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/${R_NAME}_gen)
  set(flags)
  if(R_MT)
    set(flags -M)
  endif()
  set(outputs ${out}/${base}.h ${out}/${base}_xdr.c)
  set(commands
      COMMAND ${RPCGEN_EXECUTABLE} ${flags} -h -o ${base}.h ${base}.x
      COMMAND ${RPCGEN_EXECUTABLE} ${flags} -c -o ${base}_xdr.c ${base}.x)
  if(R_CLIENT)
    list(APPEND outputs ${out}/${base}_clnt.c)
    list(APPEND commands COMMAND ${RPCGEN_EXECUTABLE} ${flags} -l -o
         ${base}_clnt.c ${base}.x)
  endif()
  if(R_SERVER)
    list(APPEND outputs ${out}/${base}_svc.c)
    list(APPEND commands COMMAND ${RPCGEN_EXECUTABLE} ${flags} -m -o
         ${base}_svc.c ${base}.x)
  endif()
  # rpcgen names the header its code includes after its input, so it runs
  # beside a copy of the input. The directory is made now as well: the
  # Makefile generators enter WORKING_DIRECTORY before the first COMMAND
  # (Ninja makes it).
  file(MAKE_DIRECTORY ${out})
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out}
    COMMAND ${CMAKE_COMMAND} -E copy ${x} ${out}/${base}.x
    COMMAND ${CMAKE_COMMAND} -E rm -f ${outputs}
    ${commands}
    WORKING_DIRECTORY ${out}
    DEPENDS ${x}
    COMMENT "rpcgen ${base}.x")
  add_library(${R_NAME} STATIC ${outputs})
  target_include_directories(${R_NAME} PUBLIC ${out})
  target_link_libraries(${R_NAME} PUBLIC PkgConfig::TIRPC)
  target_compile_options(${R_NAME} PRIVATE -w)
endfunction()
