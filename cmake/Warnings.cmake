# Project-wide compile flags. Warnings are errors unless RPCRDMA_WERROR is off.
add_compile_options(-Wall -Wextra -Wpedantic -Wshadow -Wconversion
                    -Wno-sign-conversion -Wnon-virtual-dtor)
if(RPCRDMA_WERROR)
  add_compile_options(-Werror)
endif()

if(RPCRDMA_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

set(RPCRDMA_CAN_FUZZ OFF)
if(RPCRDMA_FUZZ AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(RPCRDMA_CAN_FUZZ ON)
endif()
