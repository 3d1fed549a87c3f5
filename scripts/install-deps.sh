#!/usr/bin/env bash
# Installs every Debian package the build and the tests need, and nothing
# that is already there. Idempotent and non-interactive; run as root (or with
# sudo available) on Debian 12.
set -euo pipefail

packages=(
  build-essential cmake make ninja-build pkg-config git ca-certificates
  ccache  # optional: every build compiles through it when present (cmake/CompilerCache.cmake)
  clang clang-format libclang-rt-14-dev llvm
  dpkg-dev file  # make package: cpack's DEB generator and dpkg-shlibdeps
  libibverbs-dev librdmacm-dev ibverbs-providers rdma-core
  libthrift-dev thrift-compiler libboost-dev libevent-dev  # Thrift: its headers include Boost, TNonblockingServer libevent
  libtirpc-dev  # ONC RPC (the adapter and the API benchmark's baseline)
  rpcsvc-proto patch  # rpcgen, and the fixes to draft-04 XDR it needs (interop/xdr_v2)
  libabsl-dev zlib1g-dev
  libgtest-dev libgmock-dev googletest
  libbenchmark-dev
  libprotobuf-dev libprotoc-dev protobuf-compiler
  libgrpc++-dev protobuf-compiler-grpc  # tests only: the protobuf adapter beside gRPC, never linked into the library
  nlohmann-json3-dev libpcap-dev
  prometheus-cpp-dev libmicrohttpd-dev  # optional exporter library rpcrdma_prometheus: its text format, its HTTP listener
  chromium  # headless, for the test of the exporter's /status page (skipped without it)
  tshark
  e2fsprogs  # mkfs.ext4: nfs3d_cold_restart_test's loop-mounted image
  qemu-system-x86 cpio kmod iproute2 rdmacm-utils ibverbs-utils perftest  # Soft-RoCE test VM (interop/vm)
  libwrap0  # the library the VM's rpc.mountd and rpcbind need beyond these (interop/vm/prepare-image.sh)
)

# The Bazel build (make test-bazel) needs Debian's offline Bazel.
if [ "${1:-}" = "--with-bazel" ]; then
  packages+=(bazel-bootstrap default-jdk-headless)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# wireshark-common asks whether non-root users may capture; answer for it.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
