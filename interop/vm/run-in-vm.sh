#!/usr/bin/env bash
# Runs a command inside a throw-away VM that has a Soft-RoCE device:
#
#   run-in-vm.sh --cache DIR --share DIR [--ro DIR]... [--services nfsd|nfsd3]
#                [--env NAME=VALUE]... [--timeout S] [--accel tcg|kvm]
#                [--memory MB] [--smp N] [--verbose] -- COMMAND [ARG]...
#
# The VM boots Debian's kernel (linux-image-amd64) under qemu with an
# initramfs built by prepare-image.sh into the cache DIR. Inside it:
#   - the host's /usr is mounted read-only (virtio-9p), so host-built
#     binaries find the same shared libraries (libibverbs and its rxe
#     provider, librdmacm, libstdc++, abseil, protobuf, ...) and tools
#     (rdma, ip, rping, ibv_devinfo, ...) as on the host;
#   - the --share DIR is mounted read-write at the same path as on the
#     host (and at /share); each --ro DIR is mounted read-only at its own
#     path, so build trees and sources keep their host paths;
#   - rxe0 is a Soft-RoCE device on dummy0, which has 192.0.2.1/24. There
#     is no other network device. rdma-cm cannot use 127.0.0.1 over rxe:
#     a test's server and client both use 192.0.2.1;
#   - --services nfsd loads rpcrdma (xprtrdma and svcrdma) and nfsd,
#     mounts /proc/fs/nfsd, enables NFSv4 only (there is no rpcbind),
#     exports the empty tmpfs /srv/nfs as the NFSv4 pseudo-root (fsid=0,
#     rw, no_root_squash, insecure, sync) to 192.0.2.0/24 and 127.0.0.1,
#     opens the RPC-over-RDMA listener with `echo 'rdma 20049' >
#     /proc/fs/nfsd/portlist`, starts 4 nfsd threads and ends the grace
#     period at once (lease and grace time 10 s). The nfs, nfsv3 and
#     nfsv4 client modules are in the image too (modprobe loads them).
#   - --services nfsd3 starts nfsd as nfsd does but serving NFS versions 3
#     and 4, with Debian's rpc.mountd (MOUNT version 3 on the fixed port
#     20048, TCP and UDP), exportfs and rpcbind (which nfsd's lockd needs);
#     the same export, from /etc/exports. See README.md.
# COMMAND runs under bash in the caller's directory if the guest sees it
# (inside the share or an --ro directory), else in the share, with
# RPCRDMA_TEST_ADDR=192.0.2.1, RPCRDMA_VM=1 and RPCRDMA_VM_SERVICES (the
# --services list) in its environment plus every --env and any
# ASAN_OPTIONS/UBSAN_OPTIONS/LSAN_OPTIONS of the caller. Its stdout and stderr go to DIR/vm-output.log, which this script
# prints; the guest's console is in DIR/vm-console.log, the kernel log in
# DIR/vm-dmesg.log.
#
# Exit status: COMMAND's. 124 when the VM did not finish within the
# timeout (default 300 s), 125 when the VM could not be set up or did not
# report a status, 2 for a usage error.
#
# Environment: RPCRDMA_VM_ACCEL (tcg or kvm; default tcg, the only one
# that boots Debian's kernel under the nested KVM of some cloud hosts),
# RPCRDMA_VM_CPU (qemu -cpu; default max, or host with kvm),
# RPCRDMA_VM_TIMEOUT, RPCRDMA_VM_CACHE, RPCRDMA_VM_QEMU (the qemu binary).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${RPCRDMA_VM_CACHE:-}"
share=""
ro=()
services=""
envs=()
timeout_s="${RPCRDMA_VM_TIMEOUT:-300}"
accel="${RPCRDMA_VM_ACCEL:-tcg}"
memory=1024
smp=2
verbose=0
qemu="${RPCRDMA_VM_QEMU:-qemu-system-x86_64}"

usage() {
  sed -n '2,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
die() {
  echo "run-in-vm: $*" >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case "$1" in
    --cache) cache="${2:?}"; shift 2 ;;
    --share) share="${2:?}"; shift 2 ;;
    --ro) ro+=("${2:?}"); shift 2 ;;
    --services) services="${2:?}"; shift 2 ;;
    --env) envs+=("${2:?}"); shift 2 ;;
    --timeout) timeout_s="${2:?}"; shift 2 ;;
    --accel) accel="${2:?}"; shift 2 ;;
    --memory) memory="${2:?}"; shift 2 ;;
    --smp) smp="${2:?}"; shift 2 ;;
    --verbose) verbose=1; shift ;;
    --) shift; break ;;
    -h | --help) usage ;;
    *) echo "run-in-vm: unknown argument: $1" >&2; usage ;;
  esac
done
[ $# -gt 0 ] || { echo "run-in-vm: no COMMAND after --" >&2; usage; }
[ -n "$cache" ] || die "--cache DIR is required"
[ -n "$share" ] || die "--share DIR is required"
[[ "$timeout_s" =~ ^[0-9]+$ ]] || die "--timeout takes whole seconds"
[[ "$memory" =~ ^[0-9]+$ ]] || die "--memory takes megabytes"
[[ "$smp" =~ ^[0-9]+$ ]] || die "--smp takes a number of CPUs"
case "$accel" in
  tcg) accel_args=(-accel tcg -cpu "${RPCRDMA_VM_CPU:-max}") ;;
  kvm) accel_args=(-accel kvm -cpu "${RPCRDMA_VM_CPU:-host}") ;;
  *) die "--accel must be tcg or kvm, not '$accel'" ;;
esac
IFS=, read -r -a service_list <<<"$services"
for s in "${service_list[@]}"; do
  case "$s" in
    nfsd | nfsd3) ;;
    *) die "unknown service '$s' (known: nfsd, nfsd3)" ;;
  esac
done
[[ ",$services," != *,nfsd,* || ",$services," != *,nfsd3,* ]] ||
  die "--services: nfsd and nfsd3 both start nfsd; give one"
for e in "${envs[@]}"; do
  [[ "$e" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "--env takes NAME=VALUE"
done
command -v "$qemu" >/dev/null 2>&1 ||
  die "$qemu not found; run scripts/install-deps.sh"

# A directory as the guest sees it: same absolute path (symlinks kept, as
# the caller wrote it). Paths go on the kernel command line and into qemu
# options, so they must not contain blanks or commas.
guest_path() {
  local p
  p="$(cd "$1" && pwd)" || die "no such directory: $1"
  [[ "$p" =~ ^/[A-Za-z0-9._/+@=:-]*$ ]] ||
    die "path '$p' has characters the VM cannot pass (blank or comma)"
  case "$p/" in
    /usr/* | /bin/* | /sbin/* | /lib/* | /lib64/* | /proc/* | /sys/* | \
      /dev/* | /kroot/* | /bb/* | /etc/* | /)
      die "cannot mount '$p' in the VM (it shadows the guest's system)" ;;
  esac
  echo "$p"
}

mkdir -p "$share" "$cache"
share="$(guest_path "$share")"
cache="$(cd "$cache" && pwd)"

# Shares in mount order (parents before children).
mounts=("share:$share")
qemu_shares=(-virtfs "local,path=/usr,mount_tag=hostusr,security_model=none,readonly=on,multidevs=remap"
  -virtfs "local,path=$share,mount_tag=share,security_model=none,multidevs=remap")
i=0
for d in "${ro[@]}"; do
  p="$(guest_path "$d")"
  mounts+=("ro$i:$p")
  qemu_shares+=(-virtfs "local,path=$p,mount_tag=ro$i,security_model=none,readonly=on,multidevs=remap")
  i=$((i + 1))
done
mount_arg="$(printf '%s\n' "${mounts[@]}" |
  awk '{ s = $0; n = gsub("/", "/", s); print n, $0 }' | sort -n -s -k1,1 |
  cut -d' ' -f2- | paste -sd,)"

# The image (downloads happen here on the first run).
start=$(date +%s)
bash "$here/prepare-image.sh" --cache "$cache" ||
  { echo "run-in-vm: preparing the VM image failed" >&2; exit 125; }
image="$cache/image"

# The command runs in the caller's directory when the guest sees it (it
# is inside the share or an --ro directory), else in the share.
workdir="$share"
caller_dir="$(pwd)"
for m in "${mounts[@]}"; do
  case "$caller_dir/" in "${m#*:}"/*) workdir="$caller_dir" ;; esac
done

# The command, as a script in the share.
cmd_file="$share/vm-command.sh"
{
  echo "# Written by run-in-vm.sh; run by the VM's /init."
  echo "export RPCRDMA_TEST_ADDR=192.0.2.1"
  echo "export RPCRDMA_VM=1"
  printf 'export RPCRDMA_VM_SERVICES=%q\n' "$services"
  for v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS; do
    if [ -n "${!v:-}" ]; then printf 'export %s=%q\n' "$v" "${!v}"; fi
  done
  for e in "${envs[@]}"; do
    printf 'export %s=%q\n' "${e%%=*}" "${e#*=}"
  done
  printf 'cd %q || exit 125\n' "$workdir"
  printf 'exec'
  printf ' %q' "$@"
  printf '\n'
} >"$cmd_file"
rm -f "$share"/vm-{output.log,status,error,dmesg.log,setup.log,console.log}

# Kernel messages below warning level reach the console only with
# --verbose (the console is a slow emulated UART).
loglevel=4
[ "$verbose" = 0 ] || loglevel=7
append="console=ttyS0 panic=-1 oops=panic loglevel=$loglevel rdinit=/init"
append+=" rpcrdma_vm.mounts=$mount_arg rpcrdma_vm.run=vm-command.sh"
[ -z "$services" ] || append+=" rpcrdma_vm.services=$services"

boot=$(date +%s)
set +e
timeout --kill-after=10 "$timeout_s" "$qemu" \
  -nodefaults -no-user-config -display none -no-reboot \
  "${accel_args[@]}" -m "$memory" -smp "$smp" \
  -nic none -serial "file:$share/vm-console.log" -monitor none \
  -kernel "$image/vmlinuz" -initrd "$image/initramfs.cpio" \
  -append "$append" \
  "${qemu_shares[@]}" </dev/null
qemu_status=$?
set -e
end=$(date +%s)

show_console() {
  echo "---- guest console (tail of $share/vm-console.log) ----"
  tail -n "${1:-60}" "$share/vm-console.log" 2>/dev/null || true
  echo "---- end of guest console ----"
}

if [ "$verbose" = 1 ]; then show_console 100000; fi
if [ -f "$share/vm-output.log" ]; then
  echo "---- guest output ($*) ----"
  cat "$share/vm-output.log"
  echo "---- end of guest output ----"
fi
if [ "$qemu_status" -eq 124 ] || [ "$qemu_status" -eq 137 ]; then
  [ "$verbose" = 1 ] || show_console
  echo "run-in-vm: TIMEOUT: the VM did not finish within ${timeout_s} s" \
    "(raise --timeout or RPCRDMA_VM_TIMEOUT; --verbose shows the kernel's" \
    "boot messages)" >&2
  exit 124
fi
if [ -f "$share/vm-error" ]; then
  [ "$verbose" = 1 ] || show_console
  echo "---- guest setup log ----"
  cat "$share/vm-setup.log" 2>/dev/null || true
  echo "run-in-vm: VM setup failed: $(cat "$share/vm-error")" >&2
  exit 125
fi
status="$(cat "$share/vm-status" 2>/dev/null || true)"
if ! [[ "$status" =~ ^[0-9]+$ ]]; then
  [ "$verbose" = 1 ] || show_console
  echo "run-in-vm: the VM reported no exit status (qemu exited with" \
    "$qemu_status); see the console above" >&2
  exit 125
fi
echo "run-in-vm: '$*' exited with status $status" \
  "(image $((boot - start)) s, VM $((end - boot)) s, accel $accel," \
  "kernel $(cat "$image/kernel-release"))"
exit "$status"
