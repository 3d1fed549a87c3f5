#!/usr/bin/env bash
# Runs the blob store's server and client as separate processes and checks
# what they do (the ctests protobuf_blob_store_example.*):
#
#   run_blob_store.sh SERVER CLIENT soft_unix|soft_tcp|rdma
#
# soft_unix and soft_tcp are RPC-over-RDMA on the soft fabric, rdma is
# rdma:// on the Soft-RoCE device of the test VM (RPCRDMA_TEST_ADDR).
# Values of 0 B, 1 KiB, 1 MiB and 16 MiB are put and read back and
# compared byte for byte (the last two travel as RDMA chunks both ways);
# a watcher must see every change of its prefix, in order, and none
# other; the server's errors must reach the client with their codes; and
# SIGTERM must end the server cleanly, and its watchers with UNAVAILABLE.
set -euo pipefail

server_bin=$1
client_bin=$2
case "$3" in
  soft_unix) listen="soft+unix://@rpcrdma-blob-store-$$-$RANDOM" ;;
  soft_tcp) listen="soft+tcp://127.0.0.1:0" ;;
  rdma) listen="rdma://${RPCRDMA_TEST_ADDR:?the VM sets it}:0" ;;
  *) echo "unknown transport $3" >&2; exit 2 ;;
esac

work=$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/blob_store.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAILED: $*" >&2
  for log in "$work"/*.out "$work"/*.err; do
    [ -s "$log" ] && { echo "--- $(basename "$log"):" >&2; cat "$log" >&2; }
  done
  exit 1
}

# Waits (at most 60 s: the VM is slow) until FILE has a line matching RE.
wait_for_line() {
  local file=$1 re=$2 pid=$3
  for _ in $(seq 600); do
    grep -q "$re" "$file" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || fail "process $pid exited before \"$re\""
    sleep 0.1
  done
  fail "no \"$re\" in $file after 60 s"
}

# 40 MiB: room for the values below and one more 16 MiB, not two.
"$server_bin" --listen "$listen" --max-store-bytes $((40 << 20)) \
  >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
pids+=("$server_pid")
wait_for_line "$work/server.out" '^listening on ' "$server_pid"
address=$(sed -n 's/^listening on //p' "$work/server.out")
echo "server at $address"

client() { "$client_bin" --connect "$address" "$@"; }

# A watcher of the prefix "blob-" that stops after the six changes below,
# and one of every key that runs until the server stops.
client watch blob- 6 >"$work/watch_blob.out" 2>"$work/watch_blob.err" &
watch_blob_pid=$!
pids+=("$watch_blob_pid")
client watch "" >"$work/watch_all.out" 2>"$work/watch_all.err" &
watch_all_pid=$!
pids+=("$watch_all_pid")
wait_for_line "$work/watch_blob.out" '^watching blob-$' "$watch_blob_pid"
wait_for_line "$work/watch_all.out" '^watching $' "$watch_all_pid"

# Around the sizes that matter: empty, inline, and chunks of 1 and 16 MiB
# (the largest value the server takes by default).
: >"$work/empty"
head -c 1024 /dev/urandom >"$work/1k"
head -c $((1 << 20)) /dev/urandom >"$work/1m"
head -c $((16 << 20)) /dev/urandom >"$work/16m"
for f in empty 1k 1m 16m; do
  client put "blob-$f" "$work/$f" >"$work/put.out" || fail "put blob-$f"
  # At or above the 4096-octet bulk threshold the value is a chunk.
  case $f in empty | 1k) way=inline ;; *) way="in a read chunk" ;; esac
  grep -q "(value $way)\$" "$work/put.out" ||
    fail "put blob-$f: $(cat "$work/put.out"), expected the value $way"
  client get "blob-$f" "$work/$f.back" || fail "get blob-$f"
  cmp "$work/$f" "$work/$f.back" || fail "blob-$f read back differs"
  sum=$(sha256sum <"$work/$f" | cut -d' ' -f1)
  back=$(sha256sum <"$work/$f.back" | cut -d' ' -f1)
  [ "$sum" = "$back" ] || fail "blob-$f: sha256 $sum, read back $back"
  echo "put ($way), get blob-$f ($(stat -c %s "$work/$f") octets, sha256 ${sum:0:16}...)  ok"
done
client put other "$work/1k" >/dev/null || fail "put other"
client put blob-second "$work/16m" >/dev/null || fail "put blob-second"
client delete blob-empty || fail "delete blob-empty"

client list blob- >"$work/listing" || fail "list"
printf '%s\n' "blob-16m $((16 << 20))" "blob-1k 1024" "blob-1m $((1 << 20))" \
  "blob-second $((16 << 20))" | diff - "$work/listing" || fail "list blob-"
echo "list blob-  ok"

# Errors are errors, with the server's code.
expect_error() {
  local code=$1
  shift
  if client "$@" >/dev/null 2>"$work/client.err"; then
    fail "$* succeeded"
  fi
  grep -q ": $code: " "$work/client.err" ||
    fail "$*: expected $code, got: $(cat "$work/client.err")"
  echo "$* -> $(cat "$work/client.err")  ok"
}
head -c $(((16 << 20) + 1)) /dev/zero >"$work/too_large"
expect_error NOT_FOUND get blob-empty "$work/missing"
expect_error NOT_FOUND delete never-there
expect_error INVALID_ARGUMENT put "" "$work/1k"
expect_error INVALID_ARGUMENT get "$(head -c 1025 /dev/zero | tr '\0' k)" -
expect_error RESOURCE_EXHAUSTED put blob-too-large "$work/too_large"
expect_error RESOURCE_EXHAUSTED put blob-third "$work/16m"
client get blob-16m "$work/16m.again" || fail "get blob-16m again"
cmp "$work/16m" "$work/16m.again" || fail "blob-16m after the refused puts"

# The prefix watcher saw exactly the changes of its keys, in order, and
# stopped after the sixth; the other saw "other" too.
wait "$watch_blob_pid" || fail "the watcher of blob- failed"
printf '%s\n' "watching blob-" "put blob-empty 0" "put blob-1k 1024" \
  "put blob-1m $((1 << 20))" "put blob-16m $((16 << 20))" \
  "put blob-second $((16 << 20))" "delete blob-empty" |
  diff - "$work/watch_blob.out" || fail "the watcher of blob- saw otherwise"
echo "watch blob- (6 changes in order)  ok"
wait_for_line "$work/watch_all.out" '^delete blob-empty$' "$watch_all_pid"
grep -qx "put other 1024" "$work/watch_all.out" || fail "watch \"\" missed other"

# SIGTERM: the server ends its watches, stops and exits 0.
kill -0 "$server_pid" 2>/dev/null || fail "the server died"
kill -TERM "$server_pid"
server_status=0
wait "$server_pid" || server_status=$?
[ "$server_status" -eq 0 ] || fail "the server exited with $server_status"
grep -qx stopped "$work/server.out" || fail "the server did not say stopped"
watch_status=0
wait "$watch_all_pid" || watch_status=$?
[ "$watch_status" -eq 1 ] || fail "the watcher of every key exited $watch_status"
grep -q ': UNAVAILABLE: the blob store is stopping' "$work/watch_all.err" ||
  fail "the watcher of every key: $(cat "$work/watch_all.err")"
echo "SIGTERM: server stopped, watcher ended UNAVAILABLE  ok"
echo "blob store over $3 passed"
