#!/usr/bin/env bash
# Benchmarks inside the Soft-RoCE VM, run by run-in-vm.sh (make bench-vm):
#
#   bench-guest.sh FABRIC_BENCH_BINARY
#
# Runs perftest's ib_send_lat, ib_write_bw and ib_read_bw on rxe0, then the
# project's fabric_bench with the verbs provider on the same device, so the
# two are measured in the same run on the same (emulated) machine.
# perftest needs "-x 1": GID index 1 is ::ffff:192.0.2.1 on rxe0; without
# it the rdma-cm variants fail and a client may crash, leaving its server
# waiting.
set -uo pipefail

addr="${RPCRDMA_TEST_ADDR:?run this inside run-in-vm.sh}"
fabric_bench="${1:?usage: bench-guest.sh FABRIC_BENCH_BINARY}"
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
