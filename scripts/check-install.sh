#!/usr/bin/env bash
# Checks that rpcrdma is a library people can install and use: given a
# build directory that `make package` made (CMAKE_INSTALL_PREFIX=/usr, debs
# already packed), it
#   1. installs it into a temporary prefix and checks the shared library
#      (SONAME, no libpcap) and that every installed header compiles on its
#      own with nothing but the installed include directory;
#   2. builds examples/consumer out of tree against that prefix with
#      find_package (shared and static library) and with pkg-config, and
#      runs it; it includes examples/kv_store.cc, the program of
#      docs/writing-an-rpc-program.md, which so builds from installed
#      headers alone;
#   3. checks the Debian packages (librpcrdma1, librpcrdma-oncrpc1,
#      librpcrdma-dev, rpcrdma-tools, librpcrdma-thrift1,
#      librpcrdma-thrift-dev, librpcrdma-prometheus1,
#      librpcrdma-prometheus-dev, librpcrdma-protobuf1,
#      librpcrdma-protobuf-dev), unpacks them into a temporary root and
#      builds and runs the consumer against that root the same ways; the
#      installed and packaged tools answer --help. The consumer's Thrift,
#      Prometheus and protobuf programs (-DWITH_THRIFT=ON
#      -DWITH_PROMETHEUS=ON -DWITH_PROTOBUF=ON; the last generates its
#      service with the installed protoc-gen-rpcrdma) run with the shared
#      library and pkg-config builds. No program runs with
#      LD_LIBRARY_PATH: each installed library finds the others beside it.
# Usage: scripts/check-install.sh <build-dir>
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=$(cd "${1:?usage: $0 <build-dir>}" && pwd)
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

step() { echo "check-install: $*"; }
fail() { echo "check-install: FAILED: $*" >&2; exit 1; }

# consumer <name> <prefix> [cmake args...]: builds and runs the example.
consumer() {
  local name=$1 prefix=$2
  shift 2
  step "consumer ($name) against $prefix"
  cmake -S "$src/examples/consumer" -B "$work/consumer-$name" -G Ninja \
    -DCMAKE_PREFIX_PATH="$prefix" "$@" > "$work/consumer-$name.log" 2>&1 ||
    { cat "$work/consumer-$name.log"; fail "configuring the consumer ($name)"; }
  cmake --build "$work/consumer-$name" >> "$work/consumer-$name.log" 2>&1 ||
    { cat "$work/consumer-$name.log"; fail "building the consumer ($name)"; }
  "$work/consumer-$name/rpcrdma_consumer" || fail "running the consumer ($name)"
  "$work/consumer-$name/rpcrdma_kv_store" > "$work/kv_store-$name.log" 2>&1 ||
    { cat "$work/kv_store-$name.log"; fail "running kv_store ($name)"; }
  if [ -x "$work/consumer-$name/rpcrdma_oncrpc_consumer" ]; then
    "$work/consumer-$name/rpcrdma_oncrpc_consumer" \
      "soft+unix://@rpcrdma-check-install-$name-$$" ||
      fail "running the ONC RPC consumer ($name)"
  elif [ "$name" != "${name%static}" ]; then
    :  # the adapter is not linked statically
  else
    fail "the ONC RPC consumer ($name) was not built"
  fi
  if [ -x "$work/consumer-$name/rpcrdma_thrift_consumer" ]; then
    "$work/consumer-$name/rpcrdma_thrift_consumer" ||
      fail "running the Thrift consumer ($name)"
  fi
  if [ -x "$work/consumer-$name/rpcrdma_prometheus_consumer" ]; then
    "$work/consumer-$name/rpcrdma_prometheus_consumer" ||
      fail "running the Prometheus consumer ($name)"
  fi
  if [ -x "$work/consumer-$name/rpcrdma_protobuf_consumer" ]; then
    "$work/consumer-$name/rpcrdma_protobuf_consumer" ||
      fail "running the protobuf consumer ($name)"
  fi
}

# plain_pkgconfig <name> <prefix>: each consumer built by one compiler line
# from pkg-config with the run path docs/getting-started.md gives, and run
# (for the installed tree; the packages' .pc files are those of the
# pkg-config consumer above).
plain_pkgconfig() {
  local name=$1 prefix=$2 program module source
  export PKG_CONFIG_PATH="$prefix/lib/$arch/pkgconfig"
  for program in rpcrdma:main.cc rpcrdma-thrift:thrift_main.cc \
                 rpcrdma-prometheus:prometheus_main.cc; do
    module=${program%%:*} source=${program#*:}
    step "consumer $source with pkg-config $module, one compiler line ($name)"
    # shellcheck disable=SC2046  # pkg-config's output is a list of flags
    c++ -std=c++20 "$src/examples/consumer/$source" \
      $(pkg-config --cflags --libs "$module") \
      -Wl,-rpath,"$(pkg-config --variable=libdir "$module")" \
      -o "$work/plain-$name-$module" ||
      fail "building $source with pkg-config ($name)"
    "$work/plain-$name-$module" || fail "running $source ($name)"
  done
  unset PKG_CONFIG_PATH
}

# docs_name_installed_files <prefix>: every header the README and docs/
# name as <rpcrdma/...> is installed under <prefix>/include, and every
# /usr/... file they name is in the unpacked packages under <prefix>
# (source paths are written relative to the checkout, never as /usr/...).
docs_name_installed_files() {
  local prefix=$1 header path
  step "headers and /usr paths the docs name exist under $prefix"
  for header in $(grep -hoE '<rpcrdma/[A-Za-z0-9_./]+\.(h|proto)>' \
                    "$src/README.md" "$src"/docs/*.md | sort -u); do
    header=${header#<} header=${header%>}
    [ -f "$prefix/include/$header" ] ||
      fail "the docs name <$header>, which is not installed"
  done
  for path in $(grep -hoE '/usr/include/rpcrdma/[A-Za-z0-9_./]+' \
                  "$src/README.md" "$src"/docs/*.md | sort -u); do
    [ -f "$prefix/${path#/usr/}" ] ||
      fail "the docs name $path, which no package installs"
  done
}

# check_tree <prefix>: the library and headers under an installed prefix.
check_tree() {
  local prefix=$1 libdir=$1/lib/$arch
  local soname
  soname=$(readelf -d "$libdir/librpcrdma.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
  [ "$soname" = "librpcrdma.so.1" ] || fail "SONAME is '$soname', not librpcrdma.so.1"
  [ -f "$libdir/librpcrdma.a" ] || fail "no librpcrdma.a in $libdir"
  if readelf -d "$libdir/librpcrdma.so" | grep -q 'libpcap'; then
    fail "librpcrdma.so needs libpcap"
  fi
  step "headers of $prefix/include/rpcrdma compile on their own"
  for header in "$prefix"/include/rpcrdma/*.h "$prefix"/include/rpcrdma/thrift/*.h \
                "$prefix"/include/rpcrdma/protobuf/*.h; do
    local name=${header#"$prefix/include/"}
    echo "#include <$name>" |
      c++ -std=c++20 -fsyntax-only -I "$prefix/include" -x c++ - ||
      fail "installed header $name does not compile alone"
  done
  soname=$(readelf -d "$libdir/librpcrdma_oncrpc.so" |
    sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
  [ "$soname" = "librpcrdma_oncrpc.so.1" ] ||
    fail "SONAME is '$soname', not librpcrdma_oncrpc.so.1"
  # The ONC RPC adapter's headers serve C programs as well as C++ ones.
  for header in "$prefix"/include/rpcrdma/oncrpc/*.h; do
    echo "#include <rpcrdma/oncrpc/$(basename "$header")>" |
      c++ -std=c++20 -fsyntax-only -I "$prefix/include" \
        -I /usr/include/tirpc -x c++ - ||
      fail "installed header oncrpc/$(basename "$header") does not compile alone"
    case "$header" in *.pb.h) continue ;; esac
    echo "#include <rpcrdma/oncrpc/$(basename "$header")>" |
      cc -std=c11 -fsyntax-only -I "$prefix/include" -I /usr/include/tirpc \
        -x c - ||
      fail "installed header oncrpc/$(basename "$header") does not compile as C"
  done
  local thrift_soname
  thrift_soname=$(readelf -d "$libdir/librpcrdma_thrift.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
  [ "$thrift_soname" = "librpcrdma_thrift.so.1" ] ||
    fail "SONAME is '$thrift_soname', not librpcrdma_thrift.so.1"
  local prometheus_soname
  prometheus_soname=$(readelf -d "$libdir/librpcrdma_prometheus.so" |
    sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
  [ "$prometheus_soname" = "librpcrdma_prometheus.so.1" ] ||
    fail "SONAME is '$prometheus_soname', not librpcrdma_prometheus.so.1"
  local protobuf_soname
  protobuf_soname=$(readelf -d "$libdir/librpcrdma_protobuf.so" |
    sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
  [ "$protobuf_soname" = "librpcrdma_protobuf.so.1" ] ||
    fail "SONAME is '$protobuf_soname', not librpcrdma_protobuf.so.1"
  # A program's run path does not serve the libraries it loads: each
  # library that needs librpcrdma.so.1 finds it beside itself.
  for library in librpcrdma_oncrpc librpcrdma_thrift librpcrdma_prometheus \
                 librpcrdma_protobuf; do
    readelf -d "$libdir/$library.so" | grep -q 'R.*PATH.*\$ORIGIN' ||
      fail "$library.so has no \$ORIGIN run path"
  done
}

step "install $build into $work/stage"
cmake --install "$build" --prefix "$work/stage" > /dev/null
check_tree "$work/stage"
consumer stage-cmake "$work/stage" -DWITH_THRIFT=ON -DWITH_PROMETHEUS=ON \
  -DWITH_PROTOBUF=ON
consumer stage-static "$work/stage" -DRPCRDMA_STATIC=ON
PKG_CONFIG_PATH="$work/stage/lib/$arch/pkgconfig" \
  consumer stage-pkgconfig "$work/stage" -DUSE_PKG_CONFIG=ON -DWITH_THRIFT=ON \
  -DWITH_PROMETHEUS=ON -DWITH_PROTOBUF=ON
plain_pkgconfig stage "$work/stage"

step "Debian packages"
for package in librpcrdma1 librpcrdma-oncrpc1 librpcrdma-dev rpcrdma-tools \
               librpcrdma-thrift1 librpcrdma-thrift-dev \
               librpcrdma-prometheus1 librpcrdma-prometheus-dev \
               librpcrdma-protobuf1 librpcrdma-protobuf-dev; do
  deb=$(ls "$build/${package}_${version}"_*.deb 2>/dev/null | head -n1)
  [ -n "$deb" ] || fail "no ${package}_${version}_*.deb in $build"
  dpkg-deb -f "$deb" Package Version Depends | sed 's/^/  /'
  dpkg-deb -x "$deb" "$work/debroot"
done
dpkg-deb -f "$build/librpcrdma1_${version}"_*.deb Depends | grep -q libibverbs1 ||
  fail "librpcrdma1 does not depend on libibverbs1"
dpkg-deb -f "$build/librpcrdma-dev_${version}"_*.deb Depends | grep -q libabsl-dev ||
  fail "librpcrdma-dev does not depend on libabsl-dev"
dpkg-deb -f "$build/librpcrdma-oncrpc1_${version}"_*.deb Depends |
  grep -q "librpcrdma1 (= $version)" ||
  fail "librpcrdma-oncrpc1 does not depend on librpcrdma1 (= $version)"
[ -x "$work/debroot/usr/bin/protoc-gen-rpcrdma" ] ||
  fail "rpcrdma-tools has no protoc-gen-rpcrdma"
for tool in rpcrdma-dump rpcrdma-ping rpcrdma-perf; do
  [ -x "$work/debroot/usr/bin/$tool" ] || fail "rpcrdma-tools has no $tool"
  "$work/debroot/usr/bin/$tool" --help > /dev/null ||
    fail "the packaged $tool --help fails"
  "$work/stage/bin/$tool" --help > /dev/null ||
    fail "the installed $tool --help fails"
done
check_tree "$work/debroot/usr"
docs_name_installed_files "$work/debroot/usr"
dpkg-deb -f "$build/librpcrdma-thrift1_${version}"_*.deb Depends | grep -q libthrift ||
  fail "librpcrdma-thrift1 does not depend on libthrift"
dpkg-deb -f "$build/librpcrdma-prometheus1_${version}"_*.deb Depends |
  grep -q libmicrohttpd || fail "librpcrdma-prometheus1 does not depend on libmicrohttpd"
dpkg-deb -f "$build/librpcrdma-protobuf-dev_${version}"_*.deb Depends |
  grep -q "rpcrdma-tools (= $version)" ||
  fail "librpcrdma-protobuf-dev does not depend on rpcrdma-tools, which has its plugin"
consumer deb-cmake "$work/debroot/usr" -DWITH_THRIFT=ON -DWITH_PROMETHEUS=ON \
  -DWITH_PROTOBUF=ON
PKG_CONFIG_PATH="$work/debroot/usr/lib/$arch/pkgconfig" \
  consumer deb-pkgconfig "$work/debroot/usr" -DUSE_PKG_CONFIG=ON -DWITH_THRIFT=ON \
  -DWITH_PROMETHEUS=ON -DWITH_PROTOBUF=ON
step "ok"
