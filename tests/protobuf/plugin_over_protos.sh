#!/bin/sh
# Runs protoc with protoc-gen-rpcrdma over every .proto under
# INCLUDE/google/protobuf and checks that each gets both outputs.
# Usage: plugin_over_protos.sh PROTOC PLUGIN INCLUDE OUT
set -eu
protoc=$1 plugin=$2 include=$3 out=$4
# Under bazel test, OUT is relative to the test's scratch folder.
out=${TEST_TMPDIR:+$TEST_TMPDIR/}$out
rm -rf "$out"
mkdir -p "$out"
count=0
for proto in $(cd "$include" && find google/protobuf -name '*.proto' | sort); do
  "$protoc" --plugin=protoc-gen-rpcrdma="$plugin" --rpcrdma_out="$out" \
    -I "$include" "$include/$proto"
  base=${proto%.proto}
  test -s "$out/$base.rpcrdma.pb.h" || { echo "no $base.rpcrdma.pb.h"; exit 1; }
  test -s "$out/$base.rpcrdma.pb.cc" || { echo "no $base.rpcrdma.pb.cc"; exit 1; }
  count=$((count + 1))
done
test "$count" -gt 0 || { echo "no .proto under $include/google/protobuf"; exit 1; }
echo "protoc-gen-rpcrdma accepted $count files"
