# Compiles through ccache when it is installed, so that a second build of
# the same sources (another build tree, another clone, CI after a
# developer's `make ci`) takes cached objects instead of compiling again.
# A build without ccache, or with RPCRDMA_CCACHE=OFF, compiles as before; a
# cold or missing cache costs time, never correctness (ccache hashes the
# compiler, its arguments and every header it reads).
#
# The settings travel on the launcher's command line rather than in a
# ccache.conf, so that every build of the project shares one cache wherever
# its checkout lies and whoever's configuration is in force:
#   base_dir   the checkout: paths under it are hashed relative to the
#              build directory, so a clone in another folder hits the
#              entries of this one;
#   hash_dir   off: the build directory's absolute path does not enter the
#              hash (only the debug info's compilation directory names it,
#              which nothing here reads);
#   sloppiness what precompiled headers need (CMake adds the definitions
#              and forced includes that ccache would otherwise refuse);
#   cache_dir  ccache's own default ($CCACHE_DIR, else ~/.cache/ccache),
#              outside every checkout; max_size there is ccache's default
#              unless the environment sets RPCRDMA_CCACHE_MAXSIZE.
option(RPCRDMA_CCACHE "Compile through ccache when it is installed"
       ${PROJECT_IS_TOP_LEVEL})
if(RPCRDMA_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER
   AND NOT CMAKE_C_COMPILER_LAUNCHER)
  find_program(RPCRDMA_CCACHE_PROGRAM ccache)
  if(RPCRDMA_CCACHE_PROGRAM)
    set(rpcrdma_ccache_env
        CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}
        CCACHE_NOHASHDIR=true
        CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime)
    if(DEFINED ENV{RPCRDMA_CCACHE_MAXSIZE})
      list(APPEND rpcrdma_ccache_env
           CCACHE_MAXSIZE=$ENV{RPCRDMA_CCACHE_MAXSIZE})
    endif()
    set(rpcrdma_launcher ${CMAKE_COMMAND} -E env ${rpcrdma_ccache_env}
                         ${RPCRDMA_CCACHE_PROGRAM})
    set(CMAKE_C_COMPILER_LAUNCHER ${rpcrdma_launcher})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${rpcrdma_launcher})
    message(STATUS "Compiling through ${RPCRDMA_CCACHE_PROGRAM}")
  endif()
endif()
