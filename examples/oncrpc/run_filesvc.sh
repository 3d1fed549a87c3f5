#!/usr/bin/env bash
# Runs filesvc's server and client as two processes and checks what they
# do (the ctests filesvc_example.*):
#
#   run_filesvc.sh SERVER CLIENT soft_unix|soft_tcp|tcp|rdma [POLICY]
#
# soft_unix and soft_tcp are RPC-over-RDMA on the soft fabric, rdma is
# rdma:// on the Soft-RoCE device of the test VM (RPCRDMA_TEST_ADDR), tcp
# is libtirpc's own TCP. With POLICY, both sides read their DDP policy
# from that text file (FILESVC_DDP_POLICY) instead of building it in code.
# Files are written to the server and read back, and
# both copies compared byte for byte with the original (the server's copy
# directly in the directory it serves); sizes and a listing long enough for
# a reply chunk are checked, and errors must be reported as errors.
set -euo pipefail

server_bin=$1
client_bin=$2
if [ $# -ge 4 ]; then export FILESVC_DDP_POLICY=$4; fi
case "$3" in
  soft_unix) listen="soft+unix://@rpcrdma-filesvc-$$-$RANDOM" ;;
  soft_tcp) listen="soft+tcp://127.0.0.1:0" ;;
  tcp) listen="tcp:127.0.0.1:0" ;;
  rdma) listen="rdma://${RPCRDMA_TEST_ADDR:?the VM sets it}:0" ;;
  *) echo "unknown transport $3" >&2; exit 2 ;;
esac

work=$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/filesvc.XXXXXX")
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir "$work/export" "$work/back"

fail() {
  echo "FAILED: $*" >&2
  echo "--- server's stderr:" >&2
  cat "$work/server.err" >&2 || true
  exit 1
}

"$server_bin" "$work/export" "$listen" >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
# The first line is the address clients use (the VM is slow to start one).
for _ in $(seq 600); do
  [ -s "$work/server.out" ] && break
  kill -0 "$server_pid" 2>/dev/null || fail "the server exited"
  sleep 0.1
done
address=$(head -n 1 "$work/server.out")
[ -n "$address" ] || fail "the server printed no address"
echo "server at $address"

client() { "$client_bin" "$address" "$@"; }

# Files around the sizes that matter: empty, inline, exactly one
# FILESVC_MAXIO READ and WRITE, and several with a short last one.
: >"$work/empty"
head -c 100 /dev/urandom >"$work/small"
head -c 1048576 /dev/urandom >"$work/one_mib"
head -c $((5 * 1048576 + 12345)) /dev/urandom >"$work/big"

for f in empty small one_mib big; do
  client put "$work/$f" "$f" || fail "put $f"
  cmp "$work/$f" "$work/export/$f" || fail "the server's $f differs"
  client get "$f" "$work/back/$f" || fail "get $f"
  cmp "$work/$f" "$work/back/$f" || fail "$f read back differs"
  size=$(client size "$f") || fail "size $f"
  [ "$size" = "$(stat -c %s "$work/$f")" ] || fail "size $f: $size"
  echo "put, get, size $f ($size octets)  ok"
done
sums=$(cd "$work" && md5sum big export/big back/big | cut -d' ' -f1 | sort -u)
[ "$(echo "$sums" | wc -l)" = 1 ] || fail "checksums differ: $sums"
echo "md5 of big, the server's copy and the one read back: $sums  ok"

# A listing of 200 more files, about 10 KiB of reply: over RDMA more than
# the 4096-octet inline threshold, so it comes back in a reply chunk.
for i in $(seq -w 1 200); do
  printf '%*s' "$((10#$i))" '' >"$work/export/listed-file-with-a-long-name-$i"
done
client ls | sort >"$work/listing" || fail "ls"
find "$work/export" -maxdepth 1 -type f -printf '%f %s\n' | sort >"$work/expected"
diff "$work/expected" "$work/listing" || fail "ls differs from the directory"
echo "ls ($(wc -l <"$work/listing") files)  ok"

# Errors are errors, with the server's reason.
expect_error() {
  local reason=$1
  shift
  if client "$@" >/dev/null 2>"$work/client.err"; then
    fail "$* succeeded"
  fi
  grep -q "$reason" "$work/client.err" ||
    fail "$*: expected \"$reason\", got: $(cat "$work/client.err")"
  echo "$* -> $reason  ok"
}
expect_error "no such file" get missing "$work/back/missing"
expect_error "invalid name" put "$work/small" ../escape
mkdir "$work/export/subdirectory"
expect_error "invalid name" size subdirectory
[ ! -e "$work/escape" ] || fail "a WRITE escaped the served directory"

kill -0 "$server_pid" 2>/dev/null || fail "the server died"
echo "filesvc over $3 passed"
