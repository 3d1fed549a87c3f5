# Every dependency comes from a Debian package; scripts/install-deps.sh
# installs them.

# The library's own (and so the -dev package's): rdma-core, abseil,
# protobuf, zlib (the capture tap's CRC) and threads.
find_package(absl REQUIRED)
find_package(Protobuf REQUIRED)
find_package(ZLIB REQUIRED)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(IBVERBS REQUIRED IMPORTED_TARGET libibverbs)
pkg_check_modules(RDMACM REQUIRED IMPORTED_TARGET librdmacm)
# The ONC RPC adapter (oncrpc/) extends libtirpc's CLIENT and SVCXPRT.
pkg_check_modules(TIRPC REQUIRED IMPORTED_TARGET libtirpc)

# The Thrift bridge (bridge/, rpcrdma::thrift) builds on Debian's
# libthrift-dev (Apache Thrift 0.17) and thrift-compiler for its tests.
option(RPCRDMA_BUILD_THRIFT "Build the Apache Thrift bridge (libthrift-dev)" ON)
if(RPCRDMA_BUILD_THRIFT)
  pkg_check_modules(THRIFT REQUIRED IMPORTED_TARGET thrift)
  # Thrift 0.17's TBufferBase::readAll (TBufferTransports.h, compiled into
  # every user of TFramedTransport) adds to a null read pointer before the
  # first frame arrives, over sockets as over the bridge: UBSan's
  # pointer-overflow check would stop there. It is left off for code that
  # includes Thrift's headers; ASan and the rest of UBSan stay on.
  if(RPCRDMA_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    set_property(TARGET PkgConfig::THRIFT APPEND PROPERTY
                 INTERFACE_COMPILE_OPTIONS -fno-sanitize=pointer-overflow)
  endif()
endif()

# rpcrdma-dump reads captures with libpcap and prints JSON.
if(RPCRDMA_BUILD_TOOLS)
  find_package(nlohmann_json REQUIRED)
  pkg_check_modules(PCAP REQUIRED IMPORTED_TARGET libpcap)
endif()

if(RPCRDMA_BUILD_TESTS)
  find_package(GTest REQUIRED)
  find_package(benchmark REQUIRED)
  find_program(TSHARK_EXECUTABLE tshark)
endif()

# Optional: the Prometheus exporter library (rpcrdma_prometheus) is built
# only when Debian's prometheus-cpp-dev and libmicrohttpd-dev are installed.
find_package(prometheus-cpp CONFIG QUIET)
pkg_check_modules(MICROHTTPD QUIET IMPORTED_TARGET libmicrohttpd)
