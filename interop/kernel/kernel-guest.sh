#!/usr/bin/env bash
# Runs inside the Soft-RoCE VM (ctest kernel.interop) after the harness has
# started nfsd with its RPC-over-RDMA listener and exported /srv/nfs:
#
#   kernel-guest.sh KERNEL_INTEROP_TEST [GTEST_ARGS...]
#
# The test binary fills the export and runs every step. Around it, this
# script prints what the kernel was configured with and what it logged, so
# a failure can be read from vm-output.log alone.
set -uo pipefail

test_binary="${1:?usage: kernel-guest.sh KERNEL_INTEROP_TEST [ARGS...]}"
shift

echo "==== kernel $(uname -r)"
for f in max_requests max_bc_requests max_req_size max_outbound_read_requests; do
  [ -r "/proc/sys/sunrpc/svc_rdma/$f" ] &&
    echo "svc_rdma/$f = $(cat "/proc/sys/sunrpc/svc_rdma/$f")"
done
echo "nfsd versions: $(cat /proc/fs/nfsd/versions 2>/dev/null)"
echo "nfsd max_block_size: $(cat /proc/fs/nfsd/max_block_size 2>/dev/null)"

start_ns=$(date +%s%N)
"$test_binary" "$@"
status=$?
elapsed_ms=$((($(date +%s%N) - start_ns) / 1000000))
echo "==== test binary exited with $status after ${elapsed_ms} ms"

echo "==== svcrdma counters after the run"
for f in rdma_stat_read rdma_stat_write rdma_stat_recv rdma_stat_sq_starve; do
  [ -r "/proc/sys/sunrpc/svc_rdma/$f" ] &&
    echo "svc_rdma/$f = $(cat "/proc/sys/sunrpc/svc_rdma/$f")"
done
echo "==== kernel log (RPC-over-RDMA and nfsd)"
dmesg | grep -iE 'rpcrdma|svcrdma|nfsd|rxe' | grep -v 'ommand line' | tail -n 50
exit "$status"
