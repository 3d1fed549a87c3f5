#!/usr/bin/env bash
# ctest kernel.nfs3d.wireshark: Wireshark's dissectors (tshark) read the
# capture nfs3d wrote (capture_path) of a session with the kernel's NFS
# client, and must decode every frame as RPC-over-RDMA carrying ONC RPC,
# with NFSv3 inside (the procedures a mount, a write and a read send), no
# malformed frame and no expert warning or error.
#
#   check-nfs3d-capture.sh CAPTURE.pcap
set -uo pipefail

capture="${1:?usage: check-nfs3d-capture.sh CAPTURE.pcap}"
# shellcheck source=capture-checks.sh
source "$(dirname "$0")/capture-checks.sh"
capture_checks_start kernel.nfs3d

# NFSv3 procedures (RFC 1813 §3.3) the session sends inline: LOOKUP 3,
# ACCESS 4, READ 6, COMMIT 21, FSINFO 19.
for proc in 3:LOOKUP 4:ACCESS 6:READ 19:FSINFO 21:COMMIT; do
  n=$(count "nfs && rpc.program == 100003 && rpc.programversion == 3 && rpc.procedure == ${proc%%:*}")
  echo "NFSv3 ${proc#*:}: $n"
  [ "$n" -gt 0 ] || fail "no NFSv3 ${proc#*:} decoded"
done
# A WRITE's RPC message continues in its read chunk (RFC 8166 §3.5.3),
# which our side pulls by RDMA Read: the capture holds its Send, a call
# with a read list at the data's position, but not the data, so tshark
# shows the transport header only. READ replies come with a write list.
n=$(count "rpcordma.msg_type == 0 && rpcordma.reads_count > 0")
echo "calls with read chunks (WRITE): $n"
[ "$n" -gt 0 ] || fail "no call with a read chunk"
n=$(count "rpcordma.msg_type == 0 && rpcordma.writes_count > 0 && rpc.msgtyp == 1")
echo "replies with write chunks (READ): $n"
[ "$n" -gt 0 ] || fail "no reply with a write chunk"
# Every call has its reply: nfs3d closes its capture when it stops (a
# capture cut at a buffer's end once lost the session's last frames).
unanswered=$("$tshark" -r "$capture" -T fields -e rpcordma.xid 2>/dev/null |
  sort | uniq -c | awk '$1 != 2' | wc -l)
echo "XIDs without exactly one call and one reply: $unanswered"
[ "$unanswered" -eq 0 ] || fail "$unanswered XIDs are not a call and a reply"
echo "RPC-over-RDMA messages by type: $("$tshark" -r "$capture" -T fields \
  -e rpcordma.msg_type 2>/dev/null | sort -n | uniq -c | tr '\n' ' ')"

capture_checks_finish
