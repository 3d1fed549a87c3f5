# Debian packages (`make package`, cpack): librpcrdma0 (the shared
# library), librpcrdma-dev (headers, link symlink, archive, CMake package,
# rpcrdma.pc) and rpcrdma-tools (rpcrdma-dump, rpcrdma-ping, rpcrdma-perf),
# one per install component; with the Thrift bridge also librpcrdma-thrift0
# and librpcrdma-thrift-dev.
# Build with CMAKE_INSTALL_PREFIX=/usr so that the library lands in
# Debian's multiarch directory.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rpcrdma)
set(CPACK_PACKAGE_VENDOR "rpcrdma")
set(CPACK_PACKAGE_CONTACT "rpcrdma maintainers <rpcrdma@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "RPC-over-RDMA (RFC 8166) transport library")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_COMPONENTS_ALL runtime dev tools)
if(TARGET rpcrdma_thrift)
  list(APPEND CPACK_COMPONENTS_ALL thrift thrift_dev)
endif()
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
# dpkg-shlibdeps names the runtime dependencies from what the binaries
# link (libibverbs1, librdmacm1, libprotobuf32, libabsl20220623, zlib1g,
# libpcap0.8 for the tools, ...).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)

set(rpcrdma_runtime_package librpcrdma${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${rpcrdma_runtime_package})
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
    "RPC-over-RDMA transport library\n Channel and Server for RPC-over-RDMA version one (RFC 8166, RFC 8797,\n RFC 8167) over rdma-core or a software fabric.")
# A shlibs file, so that packages linking librpcrdma.so.0 depend on it.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_GENERATE_SHLIBS ON)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME librpcrdma-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION
    "RPC-over-RDMA transport library: development files\n Headers, the static library, the CMake package (find_package(rpcrdma))\n and rpcrdma.pc for pkg-config.")
# What the installed headers, rpcrdmaConfig.cmake and rpcrdma.pc name.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "${rpcrdma_runtime_package} (= ${PROJECT_VERSION}), libabsl-dev, libprotobuf-dev, libibverbs-dev, librdmacm-dev, zlib1g-dev, pkg-config")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME rpcrdma-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION net)
set(CPACK_DEBIAN_TOOLS_DESCRIPTION
    "RPC-over-RDMA tools\n rpcrdma-dump prints the RPC-over-RDMA messages of a RoCE capture as JSON\n lines. rpcrdma-ping checks a connection and prints what it settled and\n round-trip times; rpcrdma-perf measures RPC latency, calls/s and\n bandwidth between a server and a client process.")

if(TARGET rpcrdma_thrift)
  set(rpcrdma_thrift_package librpcrdma-thrift${PROJECT_VERSION_MAJOR})
  set(CPACK_DEBIAN_THRIFT_PACKAGE_NAME ${rpcrdma_thrift_package})
  set(CPACK_DEBIAN_THRIFT_DESCRIPTION
      "RPC-over-RDMA transports for Apache Thrift\n TRdmaSocket and TRdmaServerSocket carry Thrift messages over RPC-over-RDMA\n (RFC 8166) in place of TSocket and TServerSocket; TRdmaServer serves a\n connection's calls at once; servers call clients back (RFC 8167).")
  set(CPACK_DEBIAN_THRIFT_PACKAGE_GENERATE_SHLIBS ON)
  # dpkg-shlibdeps cannot resolve librpcrdma.so.0, which this build makes:
  # what librpcrdma_thrift.so links, named by hand (Debian 12).
  set(CPACK_DEBIAN_THRIFT_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_DEBIAN_THRIFT_PACKAGE_DEPENDS
      "${rpcrdma_runtime_package} (= ${PROJECT_VERSION}), libthrift-0.17.0, libabsl20220623, libprotobuf32, libstdc++6, libc6")
  set(CPACK_DEBIAN_THRIFT_DEV_PACKAGE_NAME librpcrdma-thrift-dev)
  set(CPACK_DEBIAN_THRIFT_DEV_PACKAGE_SECTION libdevel)
  set(CPACK_DEBIAN_THRIFT_DEV_DESCRIPTION
      "RPC-over-RDMA transports for Apache Thrift: development files\n Headers <rpcrdma/thrift/*.h>, the CMake component\n (find_package(rpcrdma COMPONENTS thrift)) and rpcrdma-thrift.pc.")
  set(CPACK_DEBIAN_THRIFT_DEV_PACKAGE_DEPENDS
      "${rpcrdma_thrift_package} (= ${PROJECT_VERSION}), librpcrdma-dev (= ${PROJECT_VERSION}), libthrift-dev")
endif()

include(CPack)
