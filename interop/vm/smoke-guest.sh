#!/usr/bin/env bash
# The VM smoke test, run inside the VM by run-in-vm.sh (ctest: vm.smoke):
#
#   smoke-guest.sh VERBS_SMOKE_BINARY
#
# Checks that rxe0 sits on dummy0, that libibverbs opens it through the rxe
# provider, that rdma-cm connects two processes over it (rping), and that
# a host-built program of this project runs against it. With --services
# nfsd also that nfsd listens on port 20049 and that the kernel's own
# NFSv4.0 client, over RPC-over-RDMA, mounts nfsd's export of /srv/nfs
# and reads, writes, lists, links and removes through it, and that
# nfsd's export lookups are answered (nfsd-export.sh serve).
set -uo pipefail

addr="${RPCRDMA_TEST_ADDR:?run this inside run-in-vm.sh}"
verbs_smoke="${1:?usage: smoke-guest.sh VERBS_SMOKE_BINARY}"
failures=0

# Runs one check; its time (bash's EPOCHREALTIME) goes on the result line.
check() {
  local what="$1" start status=0
  shift
  echo "==== $what"
  start="${EPOCHREALTIME/[.,]/}"
  "$@" || status=$?
  local us=$((${EPOCHREALTIME/[.,]/} - start)) took
  took="$((us / 1000000)).$((us / 100000 % 10)) s"
  if [ "$status" -eq 0 ]; then
    echo "==== PASS: $what ($took)"
  else
    echo "==== FAIL: $what (status $status, $took)"
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

# Counts the lines of $2 (a file's text) that match the bash regex $1.
count_lines() {
  local line n=0
  while IFS= read -r line; do
    [[ "$line" =~ $1 ]] && n=$((n + 1))
  done <<<"$2"
  echo "$n"
}

# The export nfsd-export.sh wrote into the kernel's caches, exactly (bash
# builtins only: every program start costs a few 100 ms under TCG).
nfsd_export() {
  local exports content fh ips grace opts n_exports n_content n_fh n_ips n_lo
  exports="$(</proc/fs/nfsd/exports)" || return 1
  content="$(</proc/net/rpc/nfsd.export/content)" || return 1
  fh="$(</proc/net/rpc/nfsd.fh/content)" || return 1
  ips="$(</proc/net/rpc/auth.unix.ip/content)" || return 1
  grace="$(</proc/fs/nfsd/nfsv4leasetime) $(</proc/fs/nfsd/nfsv4gracetime)"
  grace+=" $(</proc/fs/nfsd/v4_end_grace)" || return 1
  echo "/proc/fs/nfsd/exports:"
  echo "$exports"
  echo "/proc/net/rpc/nfsd.export/content:"
  echo "$content"
  echo "/proc/net/rpc/nfsd.fh/content:"
  echo "$fh"
  echo "lease, grace, grace ended: $grace"
  local tab=$'\t'
  opts='\(rw,insecure,no_root_squash,sync,no_wdelay,no_subtree_check,fsid=0,sec=1:0\)'
  n_exports="$(count_lines "^/srv/nfs${tab}(192\.0\.2\.0/24|127\.0\.0\.1)$opts\$" "$exports")"
  n_content="$(count_lines "^/srv/nfs${tab}(192\.0\.2\.0/24|127\.0\.0\.1)$opts\$" "$content")"
  n_fh="$(count_lines '^(192\.0\.2\.0/24|127\.0\.0\.1) 1 0x00000000 /srv/nfs$' "$fh")"
  n_ips="$(count_lines '^nfsd 192\.0\.2\.[0-9]+ 192\.0\.2\.0/24$' "$ips")"
  n_lo="$(count_lines '^nfsd 127\.0\.0\.1 127\.0\.0\.1$' "$ips")"
  echo "matching: exports $n_exports, nfsd.export $n_content, nfsd.fh $n_fh," \
    "auth.unix.ip $n_ips in 192.0.2.0/24 and $n_lo for 127.0.0.1"
  [ "$(count_lines '^[^#]' "$exports")" -eq 2 ] && [ "$n_exports" -eq 2 ] &&
    [ "$n_content" -eq 2 ] && [ "$n_fh" -eq 2 ] && [ "$n_ips" -eq 254 ] &&
    [ "$n_lo" -eq 1 ] && [ "$grace" = "10 10 Y" ]
}

# Fails with a message naming the step; the steps of nfs_io.
expect() {
  local what="$1"
  shift
  "$@" && return 0
  echo "-- failed: $what"
  return 1
}
same() { [ "$1" = "$2" ] || { echo "-- got '$1', want '$2'"; return 1; }; }
# The names in directory $1 (READDIR when it is an NFS mount), sorted.
list_dir() {
  (
    shopt -s nullglob dotglob
    cd "$1" || { echo "(cannot list $1)" && exit; }
    names=(*)
    echo "${names[*]}"
  )
}

# Through the NFS mount MNT of the server directory SRV (both with a
# subdirectory smoke/): files written on the server are read through the
# mount (READ), files written through the mount appear on the server
# (WRITE), a symlink and a directory made through the mount are there
# (CREATE), a remove goes through (REMOVE, refused during the grace
# period), and the listing matches (READDIR). Only the first access
# through the mount runs under `timeout` (each program start costs a few
# 100 ms under TCG); a later hang ends in the VM's timeout.
nfs_io() {
  local mnt="$1/smoke" srv="$2/smoke"
  expect "server writes server.txt" \
    sh -c "printf 'from the server\n' >'$srv/server.txt'" &&
    expect "server writes server.bin" cp /tmp/smoke-data "$srv/server.bin" &&
    expect "client reads server.txt" \
      same "$(timeout 30 cat "$mnt/server.txt")" "from the server" &&
    expect "client reads server.bin" cmp /tmp/smoke-data "$mnt/server.bin" &&
    expect "client writes client.txt" \
      sh -c "printf 'from the client\n' >'$mnt/client.txt'" &&
    expect "client writes client.bin" cp /tmp/smoke-data "$mnt/client.bin" &&
    expect "client makes symlink link" ln -s server.txt "$mnt/link" &&
    expect "client makes directory dir" mkdir "$mnt/dir" &&
    expect "client writes removed" sh -c "printf 'gone\n' >'$mnt/removed'" &&
    expect "client removes removed" rm "$mnt/removed" &&
    expect "server has client.txt" \
      same "$(<"$srv/client.txt")" "from the client" &&
    expect "server has client.bin" cmp /tmp/smoke-data "$srv/client.bin" &&
    expect "server has symlink link" same "$(readlink "$srv/link")" server.txt &&
    expect "server has directory dir" test -d "$srv/dir" &&
    expect "server lost removed" test ! -e "$srv/removed" &&
    expect "client lists smoke/" same "$(list_dir "$mnt")" \
      "client.bin client.txt dir link server.bin server.txt"
}

# The kernel's NFSv4.0 client mounts the pseudo-root over RPC-over-RDMA
# and runs nfs_io. 256 KiB each way is far beyond the inline threshold,
# so svcrdma moves it with RDMA Read (client WRITE) and RDMA Write (client
# READ): both of its counters must grow.
nfs_mount_rdma() {
  local mnt=/mnt/smoke-nfs srv=/srv/nfs status=0
  local opts="vers=4.0,proto=rdma,port=20049,addr=$addr,clientaddr=$addr"
  local stat=/proc/sys/sunrpc/svc_rdma
  local reads0 writes0 reads1 writes1
  reads0="$(cat $stat/rdma_stat_read)" || return 1
  writes0="$(cat $stat/rdma_stat_write)" || return 1
  mkdir -p "$mnt" "$srv/smoke" || return 1
  head -c 262144 /dev/urandom >/tmp/smoke-data || return 1
  echo "mount -t nfs4 -o $opts $addr:/ $mnt"
  timeout 60 mount -t nfs4 -o "$opts" "$addr:/" "$mnt" || return 1
  grep " $mnt " /proc/mounts
  expect "mounted with vers=4.0 and proto=rdma" grep -Eq \
    " $mnt nfs4 .*vers=4\.0,.*proto=rdma,port=20049," /proc/mounts &&
    nfs_io "$mnt" "$srv" || status=1
  timeout 60 umount "$mnt" || status=1
  reads1="$(cat $stat/rdma_stat_read)" || return 1
  writes1="$(cat $stat/rdma_stat_write)" || return 1
  echo "svcrdma rdma_stat_read $reads0 -> $reads1," \
    "rdma_stat_write $writes0 -> $writes1"
  rm -rf "${srv:?}/smoke" /tmp/smoke-data
  [ "$status" -eq 0 ] && [ "$reads1" -gt "$reads0" ] &&
    [ "$writes1" -gt "$writes0" ]
}

# nfsd-export.sh serve answers the lookups nobody wrote in advance, at
# once: with nfsd.export and nfsd.fh flushed, the mount works again
# (positive answers), and a tmpfs mounted inside the export on the server
# is not exported (negative answer), so the client sees the empty
# directory beneath it instead of waiting for rpc.mountd.
nfsd_export_upcalls() {
  local mnt=/mnt/smoke-nfs srv=/srv/nfs/smoke-sub status=0 log want
  local opts="vers=4.0,proto=rdma,port=20049,addr=$addr,clientaddr=$addr"
  mkdir -p "$mnt" "$srv/sub" || return 1
  mount -t tmpfs tmpfs "$srv/sub" || return 1
  echo inside >"$srv/sub/inside" || return 1
  echo 1 >/proc/net/rpc/nfsd.export/flush &&
    echo 1 >/proc/net/rpc/nfsd.fh/flush || return 1
  expect "mount after the flush" \
    timeout 30 mount -t nfs4 -o "$opts" "$addr:/" "$mnt" || status=1
  if [ "$status" -eq 0 ]; then
    expect "the submount is not exported" \
      same "$(list_dir "$mnt/smoke-sub/sub")" "" || status=1
    timeout 60 umount "$mnt" || status=1
  fi
  umount "$srv/sub"
  rm -rf "$srv"
  log="$(dmesg | grep -F 'nfsd-export: ')"
  echo "${log:-no nfsd-export answers in the kernel log}"
  for want in \
    'nfsd.fh "192.0.2.0/24 1 \x00000000": positive' \
    'nfsd.export "192.0.2.0/24 /srv/nfs": positive' \
    'nfsd.export "192.0.2.0/24 /srv/nfs/smoke-sub/sub": negative for 60 s'; do
    expect "kernel log: nfsd-export: $want" grep -qF "nfsd-export: $want" \
      <<<"$log" || status=1
  done
  [ "$status" -eq 0 ]
}

check "rdma link show: rxe0 on dummy0" link_on_dummy0
check "ibv_devinfo -d rxe0" devinfo
check "rping server + client over rxe0 to $addr" rping_pair
check "verbs_smoke" "$verbs_smoke" rxe0 "$addr"
checks=4
case ",${RPCRDMA_VM_SERVICES:-}," in
  *,nfsd,*)
    check "nfsd listens for RPC-over-RDMA on port 20049" nfsd_listener
    check "nfsd exports /srv/nfs as the NFSv4 pseudo-root" nfsd_export
    check "kernel NFSv4.0 client over RDMA: mount $addr:/, read, write, list, symlink, remove" \
      nfs_mount_rdma
    check "nfsd-export answers nfsd's upcalls: refill after a flush, submount not exported" \
      nfsd_export_upcalls
    checks=$((checks + 4))
    ;;
esac

echo "smoke: $((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
