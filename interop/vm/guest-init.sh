#!/bb/busybox sh
# /init of the Soft-RoCE test VM (see run-in-vm.sh). Runs as PID 1 under
# busybox, mounts the host's /usr and the test shares over virtio-9p,
# creates the Soft-RoCE device rxe0 on dummy0 (192.0.2.1/24), optionally
# starts kernel services, runs the test command and powers off.
#
# Kernel command line (all set by run-in-vm.sh):
#   rpcrdma_vm.mounts=TAG:PATH,...  9p shares, in mount order. TAG "share"
#                                   is the read-write share (also at
#                                   /share); the others are read-only.
#   rpcrdma_vm.run=FILE             script in the share to run
#   rpcrdma_vm.services=nfsd,...    kernel services to start first (nfsd
#                                   or nfsd3)
#
# Files written to the share:
#   vm-output.log  stdout and stderr of the command
#   vm-status      its exit status (a number)
#   vm-error       the setup step that failed, when one did
#   vm-dmesg.log   the kernel log at the end
#   vm-setup.log   output of the setup steps

BB=/bb/busybox
export PATH=/bb
$BB --install -s /bb

log() { echo "rpcrdma-vm: $*" >/dev/console; }

# Ends the run. The share may not be mounted yet: then the host sees the
# console log only.
finish() {
  if mountpoint -q /share; then
    dmesg >/share/vm-dmesg.log 2>&1
  fi
  sync
  poweroff -f
  sleep 5
  echo o >/proc/sysrq-trigger
}

fail() {
  log "setup failed: $*"
  if mountpoint -q /share; then
    echo "$*" >/share/vm-error
    [ -f /tmp/setup.log ] && cp /tmp/setup.log /share/vm-setup.log
  fi
  finish
}

# Runs a setup step, its output appended to /tmp/setup.log.
step() {
  echo "+ $*" >>/tmp/setup.log
  "$@" >>/tmp/setup.log 2>&1 || fail "$* (status $?)"
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /run
exec </dev/null >/dev/console 2>&1
: >/tmp/setup.log

arg() {
  for word in $(cat /proc/cmdline); do
    case "$word" in
      "rpcrdma_vm.$1="*) echo "${word#*=}" ;;
    esac
  done
}
MOUNTS="$(arg mounts)"
RUN="$(arg run)"
SERVICES="$(arg services)"
release="$(cat /kroot/release)"
log "kernel $(uname -r) up after $(cut -d' ' -f1 /proc/uptime) s"
[ "$(uname -r)" = "$release" ] || fail "kernel $(uname -r) != modules $release"

# 1. The 9p modules, by busybox insmod, in the order depmod resolved.
while read -r ko; do
  step insmod "/kroot/lib/modules/$release/$ko"
done </kroot/bootstrap-modules

msize=512000
step mount -t 9p -o trans=virtio,version=9p2000.L,msize=$msize share /share
# 2. The host's /usr: the userspace the host-built tests were linked with.
step mount -t 9p -o trans=virtio,version=9p2000.L,msize=$msize,ro,cache=loose \
  hostusr /usr
IFS_SAVE="$IFS"
IFS=,
for m in $MOUNTS; do
  IFS="$IFS_SAVE"
  tag="${m%%:*}"
  path="${m#*:}"
  [ -d "$path" ] || step mkdir -p "$path"
  if [ "$tag" = share ]; then
    [ "$path" = /share ] || step mount --bind /share "$path"
  else
    step mount -t 9p -o "trans=virtio,version=9p2000.L,msize=$msize,ro" \
      "$tag" "$path"
  fi
  IFS=,
done
IFS="$IFS_SAVE"

# From here on the real tools (iproute2, kmod, ...) come from /usr.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/bb
export HOME=/root
export LANG=C.UTF-8

# Module autoloading (request_module) goes through kmod with the module
# tree of this kernel, not the host's.
cat >/run/modprobe <<'EOF'
#!/bb/busybox sh
exec /usr/sbin/modprobe -d /kroot -C /kroot/modprobe.d "$@"
EOF
chmod 0755 /run/modprobe
echo /run/modprobe >/proc/sys/kernel/modprobe
MODPROBE=/run/modprobe
IP=/usr/sbin/ip
[ -x "$IP" ] || IP=/usr/bin/ip
RDMA=/usr/bin/rdma
[ -x "$RDMA" ] || RDMA=/usr/sbin/rdma

# 3. Soft-RoCE on dummy0. rdma-cm cannot resolve routes to 127.0.0.1 over
# rxe, so tests use 192.0.2.1 (TEST-NET-1) on dummy0.
step $MODPROBE -a crc32_generic dummy rdma_rxe rdma_ucm ib_uverbs
step $IP link set lo up
$IP link show dummy0 >/dev/null 2>&1 || step $IP link add dummy0 type dummy
step $IP addr add 192.0.2.1/24 dev dummy0
step $IP link set dummy0 up
step $RDMA link add rxe0 type rxe netdev dummy0
log "rxe0 on dummy0 after $(cut -d' ' -f1 /proc/uptime) s"

# 4. Kernel services asked for with --services.

# A line for the console and for vm-setup.log.
note() {
  log "$*"
  echo "$*" >>/tmp/setup.log
}

# The export of /srv/nfs (nfsd-export.sh, /nfsd-export in the image):
# without nfs-utils, `write` puts the entries rpc.mountd would answer
# nfsd's upcalls with straight into the kernel's caches, and `serve`
# answers the upcalls for anything else. No download, no rpcbind, no
# exports file; see nfsd-export.sh for the entries and why both are
# needed.
export_srv_nfs() {
  step /usr/bin/bash /nfsd-export write
  echo "+ /usr/bin/bash /nfsd-export serve &" >>/tmp/setup.log
  /usr/bin/bash /nfsd-export serve </dev/null >>/tmp/setup.log 2>&1 &
  export_server=$!
}

# svcrdma's settings and counters (sysctl net.sunrpc.svc_rdma.*).
svcrdma_state() {
  svcrdma_out="svcrdma:"
  for f in max_requests max_req_size max_outbound_read_requests \
    rdma_stat_read rdma_stat_write; do
    svcrdma_out="$svcrdma_out $f=$(cat "/proc/sys/sunrpc/svc_rdma/$f" 2>/dev/null || echo '?')"
  done
  echo "$svcrdma_out"
}

start_nfsd() {
  step $MODPROBE -a rpcrdma nfsd
  mkdir -p /proc/fs/nfsd
  mountpoint -q /proc/fs/nfsd || step mount -t nfsd nfsd /proc/fs/nfsd
  mkdir -p /srv/nfs
  step mount -t tmpfs -o mode=0777 tmpfs /srv/nfs
  # No rpcbind in the guest: serve NFSv4 only, which registers nothing
  # with rpcbind.
  step sh -c 'echo "-2 -3 +4 +4.1 +4.2" >/proc/fs/nfsd/versions'
  # Lease and grace time, settable only while no nfsd thread runs; 10 s is
  # the smallest value nfsd takes. The grace period is then ended as soon
  # as the threads run (v4_end_grace below): a fresh server has no client
  # state to reclaim, and during grace nfsd answers OPEN, REMOVE, RENAME
  # and READ/WRITE with the anonymous stateid with NFS4ERR_GRACE (the
  # kernel client retries, so its first OPEN waited the whole default 90
  # s). 10 s only matters if a test restarts the threads.
  step sh -c 'echo 10 >/proc/fs/nfsd/nfsv4leasetime'
  step sh -c 'echo 10 >/proc/fs/nfsd/nfsv4gracetime'
  export_srv_nfs
  # The RDMA listener first, so that nfsd opens no TCP/UDP listeners of
  # its own.
  step sh -c "echo 'rdma 20049' >/proc/fs/nfsd/portlist"
  step sh -c 'echo 4 >/proc/fs/nfsd/threads'
  step sh -c 'echo Y >/proc/fs/nfsd/v4_end_grace'
  kill -0 "$export_server" 2>/dev/null || fail "nfsd-export serve exited"
  note "nfsd: threads $(cat /proc/fs/nfsd/threads), listeners:" \
    "$(tr '\n' ' ' </proc/fs/nfsd/portlist)"
  note "nfsd: exports $(grep -v '^#' /proc/fs/nfsd/exports | tr '\n\t' '  ')"
  note "nfsd: lease $(cat /proc/fs/nfsd/nfsv4leasetime) s, grace" \
    "$(cat /proc/fs/nfsd/nfsv4gracetime) s, grace ended:" \
    "$(cat /proc/fs/nfsd/v4_end_grace)"
  note "$(svcrdma_state)"
}
# --services nfsd3: nfsd serving NFS versions 3 and 4 over RDMA, with the
# user-space side of NFSv3 from Debian's nfs-kernel-server and rpcbind
# packages (prepare-image.sh puts their daemons in /nfs-utils): the export
# in /etc/exports, loaded by exportfs; rpc.mountd answering MOUNT on the
# fixed port 20048 (TCP and UDP; MOUNT version 3 only, -N 2) and nfsd's
# export upcalls; and rpcbind, which nfsd needs for lockd (NFSv3 starts
# lockd, whose listeners register with rpcbind; without it the threads do
# not start: "lockd_up: makesock failed, error=-111"). Clients need no
# rpcbind: MOUNT and NFS are at fixed ports.
NFS_UTILS=/nfs-utils
readonly nfsd3_export='/srv/nfs 192.0.2.0/24(rw,fsid=0,no_root_squash,insecure,no_subtree_check,sync,no_wdelay,sec=sys:none) 127.0.0.1(rw,fsid=0,no_root_squash,insecure,no_subtree_check,sync,no_wdelay,sec=sys:none)'

# Waits up to 10 s for $1 (a command) to succeed.
wait_for() {
  i=0
  until "$@" >/dev/null 2>&1; do
    i=$((i + 1))
    [ "$i" -lt 100 ] || return 1
    sleep 0.1
  done
}

start_nfsd3() {
  [ -x "$NFS_UTILS/rpc.mountd" ] || fail "no $NFS_UTILS/rpc.mountd in the image"
  mkdir -p /run/rpcbind /var/lib/nfs
  : >/var/lib/nfs/etab
  : >/var/lib/nfs/rmtab
  echo "+ $NFS_UTILS/rpcbind -w -f &" >>/tmp/setup.log
  "$NFS_UTILS/rpcbind" -w -f </dev/null >>/tmp/setup.log 2>&1 &
  rpcbind_pid=$!
  wait_for "$NFS_UTILS/rpcinfo" -p 127.0.0.1 || fail "rpcbind does not answer"
  step $MODPROBE -a rpcrdma nfsd
  mkdir -p /proc/fs/nfsd
  mountpoint -q /proc/fs/nfsd || step mount -t nfsd nfsd /proc/fs/nfsd
  mkdir -p /srv/nfs
  step mount -t tmpfs -o mode=0777 tmpfs /srv/nfs
  step sh -c 'echo "-2 +3 +4 +4.1 +4.2" >/proc/fs/nfsd/versions'
  # As for nfsd (above): the shortest lease and grace, grace ended below.
  step sh -c 'echo 10 >/proc/fs/nfsd/nfsv4leasetime'
  step sh -c 'echo 10 >/proc/fs/nfsd/nfsv4gracetime'
  echo "$nfsd3_export" >/etc/exports
  step "$NFS_UTILS/exportfs" -rv
  echo "+ $NFS_UTILS/rpc.mountd -F -p 20048 -N 2 &" >>/tmp/setup.log
  "$NFS_UTILS/rpc.mountd" -F -p 20048 -N 2 </dev/null >>/tmp/setup.log 2>&1 &
  mountd_pid=$!
  wait_for sh -c "'$NFS_UTILS/rpcinfo' -p 127.0.0.1 |
    awk '\$1 == 100005 && \$3 == \"tcp\" && \$4 == 20048 { f = 1 } END { exit !f }'" ||
    fail "rpc.mountd did not register MOUNT on TCP port 20048"
  step sh -c "echo 'rdma 20049' >/proc/fs/nfsd/portlist"
  step sh -c 'echo 4 >/proc/fs/nfsd/threads'
  step sh -c 'echo Y >/proc/fs/nfsd/v4_end_grace'
  kill -0 "$rpcbind_pid" 2>/dev/null || fail "rpcbind exited"
  kill -0 "$mountd_pid" 2>/dev/null || fail "rpc.mountd exited"
  note "nfsd: versions $(cat /proc/fs/nfsd/versions), threads" \
    "$(cat /proc/fs/nfsd/threads), listeners:" \
    "$(tr '\n' ' ' </proc/fs/nfsd/portlist)"
  note "exportfs: $("$NFS_UTILS/exportfs" -v | tr '\n\t' '  ')"
  note "nfsd: max_block_size $(cat /proc/fs/nfsd/max_block_size)"
  note "rpcbind: $("$NFS_UTILS/rpcinfo" -p 127.0.0.1 | awk 'NR > 1 { print $1 "/" $2 "/" $3 "/" $4 }' | sort -u | paste -sd' ')"
  note "$(svcrdma_state)"
}
IFS=,
for s in $SERVICES; do
  IFS="$IFS_SAVE"
  case "$s" in
    nfsd) start_nfsd ;;
    nfsd3) start_nfsd3 ;;
    *) fail "unknown service '$s'" ;;
  esac
  IFS=,
done
IFS="$IFS_SAVE"
cp /tmp/setup.log /share/vm-setup.log

# 5. The command.
[ -n "$RUN" ] || fail "no rpcrdma_vm.run= on the kernel command line"
[ -f "/share/$RUN" ] || fail "command script /share/$RUN missing"
log "running $RUN after $(cut -d' ' -f1 /proc/uptime) s"
/usr/bin/bash "/share/$RUN" >/share/vm-output.log 2>&1 </dev/null
status=$?
echo "$status" >/share/vm-status
log "$RUN exited with status $status after $(cut -d' ' -f1 /proc/uptime) s"
finish
