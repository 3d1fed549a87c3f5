#!/usr/bin/env bash
# ctest kernel.wireshark: Wireshark's dissectors (tshark) read the capture
# that kernel.interop wrote of its shared connection (our requester and the
# Linux kernel's nfsd), and must decode every frame as RPC-over-RDMA
# carrying ONC RPC, our calls down to their NFSv4 operations, with no
# malformed frame and no expert warning or error.
#
#   check-capture.sh CAPTURE.pcap
set -uo pipefail

capture="${1:?usage: check-capture.sh CAPTURE.pcap}"
# shellcheck source=capture-checks.sh
source "$(dirname "$0")/capture-checks.sh"
capture_checks_start kernel.interop

# Each NFSv4 operation the shared connection's steps send (RFC 7530 §16):
# PUTROOTFH 24, LOOKUP 15, GETFH 10, PUTFH 22, READ 25, READDIR 26, and the
# RDMA_ERROR (msg_type 4) the kernel answers step 4b with.
for op in 24:PUTROOTFH 15:LOOKUP 10:GETFH 22:PUTFH 25:READ 26:READDIR; do
  n=$(count "nfs.opcode == ${op%%:*}")
  echo "NFSv4 ${op#*:}: $n"
  [ "$n" -gt 0 ] || fail "no ${op#*:} decoded"
done
errors=$(count "rpcordma.msg_type == 4")
echo "RDMA_ERROR: $errors"
[ "$errors" -ge 1 ] || fail "the kernel's RDMA_ERROR of step 4b is missing"
# Our calls carry credits we ask for; the kernel's messages the grant it
# gives (its max_requests, 64 on Linux 6.1).
echo "credit values seen: $("$tshark" -r "$capture" -T fields \
  -e rpcordma.flow_control 2>/dev/null | sort -n | uniq -c | tr '\n' ' ')"

capture_checks_finish
