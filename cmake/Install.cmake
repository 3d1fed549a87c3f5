# What `cmake --install` puts where, by component (the Debian packages of
# cmake/Packaging.cmake): `runtime` the shared library, `dev` the headers,
# the link symlink, the archive, the CMake package and rpcrdma.pc, `tools`
# rpcrdma-dump, rpcrdma-ping and rpcrdma-perf (installed from tools/dump,
# tools/ping and tools/perf), `oncrpc` the ONC RPC adapter's shared library;
# with the Prometheus exporter, `prometheus` its shared library and
# `prometheus_dev` its header, link symlink, CMake targets
# (find_package(rpcrdma COMPONENTS prometheus)) and rpcrdma-prometheus.pc;
# with the Thrift bridge, `thrift` its shared library and `thrift_dev` its
# headers, link symlink, CMake targets (find_package(rpcrdma COMPONENTS
# thrift)) and rpcrdma-thrift.pc; `protobuf` the protobuf adapter's shared
# library and `protobuf_dev` its headers, link symlink, CMake targets
# (find_package(rpcrdma COMPONENTS protobuf)) and rpcrdma-protobuf.pc.
include(CMakePackageConfigHelpers)

set(RPCRDMA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rpcrdma)

install(TARGETS rpcrdma rpcrdma_static
        EXPORT rpcrdmaTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
                COMPONENT runtime NAMELINK_COMPONENT dev
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)

# Every public header (the glob picks up new ones), the generated schema
# header and the schema itself, all included as <rpcrdma/...>. The
# Prometheus exporter's header goes with its library (below): an installed
# header with nothing to link would only fail at a consumer's link step.
file(GLOB rpcrdma_public_headers CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/plugin/include/rpcrdma/*.h)
list(FILTER rpcrdma_public_headers EXCLUDE REGEX "/prometheus\\.h$")
install(FILES ${rpcrdma_public_headers}
              ${PROJECT_BINARY_DIR}/plugin/proto/rpcrdma/config.pb.h
              ${PROJECT_SOURCE_DIR}/plugin/proto/rpcrdma/config.proto
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rpcrdma COMPONENT dev)

install(EXPORT rpcrdmaTargets NAMESPACE rpcrdma::
        DESTINATION ${RPCRDMA_CMAKE_DIR} COMPONENT dev)

# The ONC RPC adapter: librpcrdma_oncrpc.so.1 (component `oncrpc`, its own
# package), its headers as <rpcrdma/oncrpc/...> and its CMake targets in a
# file of their own that rpcrdmaConfig.cmake includes (rpcrdma::oncrpc,
# find_package(rpcrdma COMPONENTS oncrpc)).
install(TARGETS rpcrdma_oncrpc_shared
        EXPORT rpcrdmaOncrpcTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
                COMPONENT oncrpc NAMELINK_COMPONENT dev)
file(GLOB rpcrdma_oncrpc_headers CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/oncrpc/include/rpcrdma/oncrpc/*.h)
install(FILES ${rpcrdma_oncrpc_headers}
              ${PROJECT_BINARY_DIR}/oncrpc/proto/rpcrdma/oncrpc/ddp_policy.pb.h
              ${PROJECT_SOURCE_DIR}/oncrpc/proto/rpcrdma/oncrpc/ddp_policy.proto
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rpcrdma/oncrpc COMPONENT dev)
install(EXPORT rpcrdmaOncrpcTargets NAMESPACE rpcrdma::
        DESTINATION ${RPCRDMA_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/templates/rpcrdmaConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rpcrdmaConfig.cmake
  INSTALL_DESTINATION ${RPCRDMA_CMAKE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/rpcrdmaConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rpcrdmaConfig.cmake
              ${PROJECT_BINARY_DIR}/rpcrdmaConfigVersion.cmake
        DESTINATION ${RPCRDMA_CMAKE_DIR} COMPONENT dev)

# pkg-config: the prefix is found from the .pc file's own place, so that an
# installed tree (or an unpacked .deb) can be moved.
file(RELATIVE_PATH RPCRDMA_PC_PREFIX_FROM_PCFILEDIR
     ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" RPCRDMA_PC_PREFIX_FROM_PCFILEDIR
       "${RPCRDMA_PC_PREFIX_FROM_PCFILEDIR}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/templates/rpcrdma.pc.in
               ${PROJECT_BINARY_DIR}/rpcrdma.pc @ONLY)
configure_file(${CMAKE_CURRENT_LIST_DIR}/templates/rpcrdma-oncrpc.pc.in
               ${PROJECT_BINARY_DIR}/rpcrdma-oncrpc.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rpcrdma.pc
              ${PROJECT_BINARY_DIR}/rpcrdma-oncrpc.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

# The Thrift bridge (bridge/), an optional component of the package.
if(TARGET rpcrdma_thrift)
  install(TARGETS rpcrdma_thrift
          EXPORT rpcrdmaThriftTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
                  COMPONENT thrift NAMELINK_COMPONENT thrift_dev)
  file(GLOB rpcrdma_thrift_headers CONFIGURE_DEPENDS
       ${PROJECT_SOURCE_DIR}/bridge/include/rpcrdma/thrift/*.h)
  install(FILES ${rpcrdma_thrift_headers}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rpcrdma/thrift
          COMPONENT thrift_dev)
  install(EXPORT rpcrdmaThriftTargets NAMESPACE rpcrdma::
          DESTINATION ${RPCRDMA_CMAKE_DIR} COMPONENT thrift_dev)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/templates/rpcrdma-thrift.pc.in
                 ${PROJECT_BINARY_DIR}/rpcrdma-thrift.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/rpcrdma-thrift.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT thrift_dev)
endif()

# The protobuf adapter (protobuf/): librpcrdma_protobuf.so.1 (component
# `protobuf`), its headers as <rpcrdma/protobuf/...>, its CMake targets and
# rpcrdma_protobuf_generate() (find_package(rpcrdma COMPONENTS protobuf),
# component `protobuf_dev`, with rpcrdma-protobuf.pc), and
# protoc-gen-rpcrdma with the tools.
install(TARGETS rpcrdma_protobuf
        EXPORT rpcrdmaProtobufTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
                COMPONENT protobuf NAMELINK_COMPONENT protobuf_dev)
install(TARGETS protoc-gen-rpcrdma
        EXPORT rpcrdmaProtobufTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
file(GLOB rpcrdma_protobuf_headers CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/protobuf/include/rpcrdma/protobuf/*.h)
install(FILES ${rpcrdma_protobuf_headers}
              ${PROJECT_SOURCE_DIR}/protobuf/include/rpcrdma/protobuf/options.proto
              ${PROJECT_BINARY_DIR}/protobuf/include/rpcrdma/protobuf/options.pb.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rpcrdma/protobuf
        COMPONENT protobuf_dev)
install(EXPORT rpcrdmaProtobufTargets NAMESPACE rpcrdma::
        DESTINATION ${RPCRDMA_CMAKE_DIR} COMPONENT protobuf_dev)
install(FILES ${PROJECT_SOURCE_DIR}/cmake/RpcrdmaProtobuf.cmake
        DESTINATION ${RPCRDMA_CMAKE_DIR} COMPONENT protobuf_dev)
configure_file(${CMAKE_CURRENT_LIST_DIR}/templates/rpcrdma-protobuf.pc.in
               ${PROJECT_BINARY_DIR}/rpcrdma-protobuf.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rpcrdma-protobuf.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT protobuf_dev)

# The Prometheus exporter (plugin/prometheus), an optional component.
if(TARGET rpcrdma_prometheus)
  install(TARGETS rpcrdma_prometheus
          EXPORT rpcrdmaPrometheusTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
                  COMPONENT prometheus NAMELINK_COMPONENT prometheus_dev)
  install(FILES ${PROJECT_SOURCE_DIR}/plugin/include/rpcrdma/prometheus.h
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rpcrdma
          COMPONENT prometheus_dev)
  install(EXPORT rpcrdmaPrometheusTargets NAMESPACE rpcrdma::
          DESTINATION ${RPCRDMA_CMAKE_DIR} COMPONENT prometheus_dev)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/templates/rpcrdma-prometheus.pc.in
                 ${PROJECT_BINARY_DIR}/rpcrdma-prometheus.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/rpcrdma-prometheus.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
          COMPONENT prometheus_dev)
endif()
