#!/usr/bin/env bash
# The VM smoke test, run inside the VM by run-in-vm.sh (ctest: vm.smoke):
#
#   smoke-guest.sh VERBS_SMOKE_BINARY
#
# Checks that rxe0 sits on dummy0, that libibverbs opens it through the rxe
# provider, that rdma-cm connects two processes over it (rping), and that
# a host-built program of this project runs against it.
set -uo pipefail

addr="${RPCRDMA_TEST_ADDR:?run this inside run-in-vm.sh}"
verbs_smoke="${1:?usage: smoke-guest.sh VERBS_SMOKE_BINARY}"
failures=0

check() {
  local what="$1"
  shift
  echo "==== $what"
  if "$@"; then
    echo "==== PASS: $what"
  else
    echo "==== FAIL: $what (status $?)"
    failures=$((failures + 1))
  fi
}

link_on_dummy0() {
  local out
  out="$(rdma link show)" || return 1
  echo "$out"
  grep -Eq '^link rxe0/1 state ACTIVE .*netdev dummy0( |$)' <<<"$out"
}

devinfo() {
  local out
  out="$(ibv_devinfo -d rxe0)" || return 1
  echo "$out"
  grep -q 'hca_id:[[:space:]]*rxe0' <<<"$out" &&
    grep -q 'state:[[:space:]]*PORT_ACTIVE' <<<"$out" &&
    grep -q 'link_layer:[[:space:]]*Ethernet' <<<"$out"
}

# rping server in the background, client in the foreground; both must
# report 3 completed ping iterations and exit 0.
rping_pair() {
  local server_log=/tmp/rping-server.log client_log=/tmp/rping-client.log
  rping -s -a "$addr" -v -C 3 >"$server_log" 2>&1 &
  local server=$!
  local status=0
  # The server needs a moment to listen; the client retries meanwhile.
  local try
  for try in 1 2 3 4 5 6 7 8 9 10; do
    if rping -c -a "$addr" -v -C 3 >"$client_log" 2>&1; then
      status=0
      break
    fi
    status=$?
    kill -0 "$server" 2>/dev/null || break
    sleep 1
  done
  echo "-- rping client (try $try, status $status):"
  cat "$client_log"
  local server_status=0
  # The server exits after the client's 3 iterations.
  for _ in $(seq 1 20); do
    kill -0 "$server" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$server" 2>/dev/null; then
    echo "-- rping server still running: killing it"
    kill "$server"
    server_status=1
  fi
  wait "$server" || server_status=$?
  echo "-- rping server (status $server_status):"
  cat "$server_log"
  [ "$status" -eq 0 ] && [ "$server_status" -eq 0 ] &&
    [ "$(grep -c '^ping data: rdma-ping-' "$client_log")" -eq 3 ] &&
    [ "$(grep -c '^server ping data: rdma-ping-' "$server_log")" -eq 3 ]
}

# --services nfsd: the kernel's RPC-over-RDMA server (svcrdma) has rdma-cm
# listeners on port 20049, for IPv4 and IPv6.
nfsd_listener() {
  local ports threads cm_ids
  ports="$(cat /proc/fs/nfsd/portlist)" || return 1
  threads="$(cat /proc/fs/nfsd/threads)" || return 1
  cm_ids="$(rdma resource show cm_id)" || return 1
  echo "portlist:"
  echo "$ports"
  echo "threads: $threads"
  echo "$cm_ids"
  grep -qx 'rdma 20049' <<<"$ports" && [ "$threads" -gt 0 ] &&
    grep -Eq 'state LISTEN ps TCP comm \[rpcrdma\] src-addr 0\.0\.0\.0:20049( |$)' \
      <<<"$cm_ids"
}

check "rdma link show: rxe0 on dummy0" link_on_dummy0
check "ibv_devinfo -d rxe0" devinfo
check "rping server + client over rxe0 to $addr" rping_pair
check "verbs_smoke" "$verbs_smoke" rxe0 "$addr"
checks=4
case ",${RPCRDMA_VM_SERVICES:-}," in
  *,nfsd,*)
    check "nfsd listens for RPC-over-RDMA on port 20049" nfsd_listener
    checks=$((checks + 1))
    ;;
esac

echo "smoke: $((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
