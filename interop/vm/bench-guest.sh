#!/usr/bin/env bash
# Benchmarks inside the Soft-RoCE VM, run by run-in-vm.sh (make bench-vm):
#
#   bench-guest.sh FABRIC_BENCH_BINARY [RPCRDMA_PERF_BINARY]
#
# Runs perftest's ib_send_lat, ib_write_bw and ib_read_bw on rxe0, then the
# project's fabric_bench with the verbs provider on the same device, so the
# two are measured in the same run on the same (emulated) machine; with
# rpcrdma-perf, NULL calls through the public API over rdma:// as a
# synchronous client makes them (--blocking), sleeping and busy polling,
# next to ib_send_lat's 64-octet one-way time.
# perftest needs "-x 1": GID index 1 is ::ffff:192.0.2.1 on rxe0; without
# it the rdma-cm variants fail and a client may crash, leaving its server
# waiting.
set -uo pipefail

addr="${RPCRDMA_TEST_ADDR:?run this inside run-in-vm.sh}"
fabric_bench="${1:?usage: bench-guest.sh FABRIC_BENCH_BINARY [RPCRDMA_PERF]}"
perf_tool="${2:-}"
sizes=(4096 65536 1048576 4194304)

# perftest TOOL [ARGS...]: a server and a client of TOOL on rxe0.
perftest() {
  local tool="$1"
  shift
  echo "==== $tool $*"
  timeout 120 "$tool" -d rxe0 -x 1 -F "$@" >/tmp/perftest-server.log 2>&1 &
  local server=$!
  sleep 1
  timeout 120 "$tool" -d rxe0 -x 1 -F "$@" "$addr" || echo "client failed"
  wait "$server" || echo "server failed"
}

perftest ib_send_lat -s 64 -n 2000
perftest ib_send_lat -s 4096 -n 2000
for size in "${sizes[@]}"; do
  perftest ib_write_bw -s "$size" -n 200
  perftest ib_read_bw -s "$size" -n 200
done

echo "==== fabric_bench (verbs on rxe0, soft, baselines)"
RPCRDMA_BENCH_VERBS_ADDR="$addr" "$fabric_bench" --benchmark_min_time=0.2

# rpcrdma-perf NULL calls, blocking client, both sides with
# execution.busy_poll_us = SPIN.
api_round_trip() {
  local spin="$1"
  local config=/tmp/rpcrdma-perf-spin-$spin.textproto
  echo "execution { busy_poll_us: $spin }" >"$config"
  echo "==== rpcrdma-perf NULL, --blocking, busy_poll_us $spin"
  rm -f /tmp/rpcrdma-perf-server.out
  timeout 120 "$perf_tool" server "rdma://$addr:0" --config "$config" \
    --duration 60s --quiet >/tmp/rpcrdma-perf-server.out 2>&1 &
  local server=$!
  local uri=""
  for _ in $(seq 100); do
    uri=$(head -n 1 /tmp/rpcrdma-perf-server.out 2>/dev/null)
    [[ "$uri" == rdma://* ]] && break
    sleep 0.1
  done
  timeout 60 "$perf_tool" client "$uri" --blocking --config "$config" \
    --duration 5s --quiet || echo "client failed"
  kill "$server" 2>/dev/null
  wait "$server" 2>/dev/null
}

if [[ -n "$perf_tool" ]]; then
  api_round_trip 0
  api_round_trip 100
fi
