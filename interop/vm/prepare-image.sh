#!/usr/bin/env bash
# Builds the boot image of the Soft-RoCE test VM from Debian packages:
#
#   prepare-image.sh --cache DIR [--refresh]
#
# Downloads (once, with `apt-get download`) the kernel that Debian's
# linux-image-amd64 currently points to, busybox-static, and the NFS
# server's daemons (nfs-kernel-server, rpcbind), unpacks them with
# `dpkg -x` inside DIR, keeps only the kernel modules the VM needs (with
# their dependencies, resolved by depmod/modprobe) and the daemons the
# `nfsd3` service runs, and writes
#
#   DIR/image/vmlinuz          the kernel
#   DIR/image/initramfs.cpio   busybox, the modules, /init (guest-init.sh),
#                              /nfs-utils (rpc.mountd, exportfs, rpcbind,
#                              rpcinfo)
#   DIR/image/kernel-release   e.g. 6.1.0-56-amd64
#
# Nothing is installed on the host: the daemons are taken out of their
# packages, not installed (installing nfs-kernel-server would enable and
# start rpcbind and an NFS server on the host). They link against the
# host's libraries like everything else in the guest; the one library of
# theirs a build machine lacks, libwrap0, is in scripts/install-deps.sh,
# and this script checks that each one resolves. A second run reuses the
# downloads and the unpacked files and only rebuilds the (small) initramfs,
# because that embeds a few files of the host's /etc (see below).
# --refresh (or RPCRDMA_VM_REFRESH=1) resolves the kernel package again.
#
# The guest's userspace is the host's /usr, mounted read-only over virtio-9p
# by guest-init.sh, so the initramfs holds no userspace besides busybox and
# those daemons.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache=""
refresh="${RPCRDMA_VM_REFRESH:-0}"

usage() {
  echo "usage: $0 --cache DIR [--refresh]" >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case "$1" in
    --cache) cache="${2:?--cache needs a directory}"; shift 2 ;;
    --refresh) refresh=1; shift ;;
    -h | --help) usage ;;
    *) echo "prepare-image: unknown argument: $1" >&2; usage ;;
  esac
done
[ -n "$cache" ] || usage

die() {
  echo "prepare-image: $*" >&2
  exit 1
}

for tool in apt-get dpkg dpkg-deb depmod modprobe cpio flock ldd; do
  command -v "$tool" >/dev/null 2>&1 ||
    die "'$tool' not found; run scripts/install-deps.sh"
done

# Modules the guest loads. Their dependencies are added automatically.
#   virtio_pci 9pnet_virtio 9p   the host shares (loaded first, by busybox)
#   dummy                        the netdev rxe0 sits on
#   crc32_generic                rdma_rxe's ICRC (no softdep says so)
#   rdma_rxe                     Soft-RoCE
#   rdma_ucm ib_uverbs           userspace verbs and rdma-cm
#   rpcrdma nfsd nfs nfsv3 nfsv4 the kernel's RPC-over-RDMA peers (in 6.1
#                                the server side, svcrdma, is in rpcrdma)
bootstrap_modules=(virtio_pci 9pnet_virtio 9p)
modules=("${bootstrap_modules[@]}" dummy crc32_generic rdma_rxe rdma_ucm
  ib_uverbs rpcrdma nfsd nfs nfsv3 nfsv4)

mkdir -p "$cache/debs"
cache="$(cd "$cache" && pwd)"
# One preparation at a time per cache (tests may run in parallel).
exec 9>"$cache/.lock"
flock 9
debs="$cache/debs"

# Runs `apt-get download PKG` into $debs, once. Prints the .deb's path.
download() {
  local pkg="$1" deb
  deb="$(find "$debs" -maxdepth 1 -name "${pkg}_*.deb" | sort | tail -n 1)"
  if [ -n "$deb" ] && [ "$refresh" != 1 ]; then
    echo "$deb"
    return
  fi
  local log="$debs/apt-get.log"
  if ! (cd "$debs" && apt-get download "$pkg") >"$log" 2>&1; then
    # A stale package list names files the mirror no longer has.
    if [ "$(id -u)" -eq 0 ]; then
      echo "prepare-image: apt-get download $pkg failed; apt-get update" >&2
      apt-get update -q >>"$log" 2>&1 || true
    fi
    (cd "$debs" && apt-get download "$pkg") >>"$log" 2>&1 || {
      cat "$log" >&2
      die "cannot download Debian package '$pkg' (apt-get update needed?)"
    }
  fi
  deb="$(find "$debs" -maxdepth 1 -name "${pkg}_*.deb" | sort | tail -n 1)"
  [ -n "$deb" ] || die "apt-get download $pkg produced no .deb"
  echo "$deb"
}

# The versioned kernel package (linux-image-6.1.0-NN-amd64) is whatever
# the linux-image-amd64 meta package depends on today.
kernel_pkg_file="$cache/kernel-package"
if [ "$refresh" = 1 ] || [ ! -s "$kernel_pkg_file" ]; then
  rm -f "$debs"/linux-image-amd64_*.deb
  meta="$(download linux-image-amd64)"
  kpkg="$(dpkg-deb -f "$meta" Depends | sed 's/[,|]/\n/g' |
    sed -n 's/^ *\(linux-image-[0-9][^ ]*\).*/\1/p' | head -n 1)"
  [ -n "$kpkg" ] || die "cannot find the kernel package in $(basename "$meta")"
  echo "$kpkg" >"$kernel_pkg_file"
fi
kpkg="$(cat "$kernel_pkg_file")"
release="${kpkg#linux-image-}"

# Unpack the kernel and keep the module subset; redone only when the
# package or the module list changes.
kdir="$cache/kernel"
kstamp="$kpkg ${modules[*]}"
if [ ! -f "$kdir/stamp" ] || [ "$(cat "$kdir/stamp")" != "$kstamp" ]; then
  kdeb="$(download "$kpkg")"
  echo "prepare-image: unpacking $(basename "$kdeb")" >&2
  rm -rf "$kdir" "$cache/kernel.full"
  full="$cache/kernel.full"
  dpkg -x "$kdeb" "$full"
  [ -f "$full/boot/vmlinuz-$release" ] || die "no vmlinuz-$release in $kdeb"
  [ -d "$full/lib/modules/$release" ] || die "no modules for $release"
  depmod -b "$full" "$release"
  mkdir -p "$kdir/root/lib/modules/$release"
  # modprobe --show-depends prints one `insmod PATH` line per module,
  # dependencies first. -C /dev/null: ignore the host's modprobe.d.
  show_depends() {
    modprobe -d "$full" -S "$release" -C /dev/null --show-depends "$1" |
      sed -n "s|^insmod $full/lib/modules/$release/\([^ ]*\).*|\1|p"
  }
  for m in "${modules[@]}"; do
    deps="$(show_depends "$m")" || die "module $m: not in $kpkg"
    [ -n "$deps" ] || die "module $m is built in or missing in $kpkg"
    while read -r rel; do
      mkdir -p "$kdir/root/lib/modules/$release/$(dirname "$rel")"
      cp -n "$full/lib/modules/$release/$rel" \
        "$kdir/root/lib/modules/$release/$rel"
    done <<<"$deps"
  done
  for m in "${bootstrap_modules[@]}"; do
    show_depends "$m"
  done | awk '!seen[$0]++' >"$kdir/bootstrap-modules"
  cp "$full/lib/modules/$release"/modules.{order,builtin,builtin.modinfo} \
    "$kdir/root/lib/modules/$release/"
  depmod -b "$kdir/root" "$release"
  cp "$full/boot/vmlinuz-$release" "$kdir/vmlinuz"
  cp "$full/boot/config-$release" "$kdir/config"
  echo "$release" >"$kdir/release"
  rm -rf "$full"
  echo "$kstamp" >"$kdir/stamp"
fi

bbdir="$cache/busybox"
if [ ! -x "$bbdir/busybox" ]; then
  bbdeb="$(download busybox-static)"
  rm -rf "$bbdir" "$cache/busybox.full"
  dpkg -x "$bbdeb" "$cache/busybox.full"
  mkdir -p "$bbdir"
  cp "$cache/busybox.full/bin/busybox" "$bbdir/busybox"
  rm -rf "$cache/busybox.full"
fi

# The daemons of the `nfsd3` service (guest-init.sh): rpc.mountd answers
# MOUNT (RFC 1813 Appendix I) and nfsd's export upcalls from /etc/exports,
# exportfs loads that file, and rpcbind is there because nfsd with NFSv3
# starts lockd, whose listeners must register with it (without rpcbind,
# `echo 4 >/proc/fs/nfsd/threads` fails: "lockd_up: makesock failed,
# error=-111"); rpcinfo is for looking at it.
nfsdir="$cache/nfs-utils"
nfs_bins=(usr/sbin/rpc.mountd usr/sbin/exportfs sbin/rpcbind usr/sbin/rpcinfo)
if [ ! -f "$nfsdir/stamp" ] || [ "$(cat "$nfsdir/stamp")" != "${nfs_bins[*]}" ]; then
  rm -rf "$nfsdir" "$cache/nfs-utils.full"
  for pkg in nfs-kernel-server rpcbind; do
    dpkg -x "$(download "$pkg")" "$cache/nfs-utils.full"
  done
  mkdir -p "$nfsdir/bin"
  for b in "${nfs_bins[@]}"; do
    [ -x "$cache/nfs-utils.full/$b" ] || die "no $b in nfs-kernel-server/rpcbind"
    cp "$cache/nfs-utils.full/$b" "$nfsdir/bin/"
  done
  rm -rf "$cache/nfs-utils.full"
  echo "${nfs_bins[*]}" >"$nfsdir/stamp"
fi
# They run against the host's libraries (the guest's /usr).
for b in "$nfsdir"/bin/*; do
  if ldd "$b" | grep -q 'not found'; then
    die "$(basename "$b") needs libraries the host lacks" \
      "($(ldd "$b" | awk '/not found/ { print $1 }' | paste -sd' '));" \
      "run scripts/install-deps.sh"
  fi
done

# The initramfs. /bin, /sbin, /lib, /lib64 point into /usr (the host's, as
# on Debian 12 with merged /usr); /etc holds copies of the few host files
# the host's userspace reads: the dynamic linker's cache and the rdma-core
# provider list (libibverbs.d/*.driver).
out="$cache/image"
mkdir -p "$out"
stage="$(mktemp -d "$cache/initramfs.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bb,dev,proc,sys,tmp,run,root,usr,mnt,share,etc,var}
ln -s usr/bin "$stage/bin"
ln -s usr/sbin "$stage/sbin"
ln -s usr/lib "$stage/lib"
ln -s usr/lib64 "$stage/lib64"
ln -s ../tmp "$stage/var/tmp"
ln -s ../run "$stage/var/run"
mkdir -p "$stage/var/lib/nfs/v4recovery"
cp "$bbdir/busybox" "$stage/bb/busybox"
cp -a "$nfsdir/bin" "$stage/nfs-utils"
cp -a "$kdir/root" "$stage/kroot"
mkdir -p "$stage/kroot/modprobe.d"
cp "$kdir/bootstrap-modules" "$stage/kroot/bootstrap-modules"
echo "$release" >"$stage/kroot/release"
install -m 0755 "$here/guest-init.sh" "$stage/init"
install -m 0755 "$here/nfsd-export.sh" "$stage/nfsd-export"
for f in ld.so.cache ld.so.conf ld.so.conf.d libibverbs.d netconfig \
  protocols services rpc nsswitch.conf; do
  if [ -e "/etc/$f" ]; then cp -a "/etc/$f" "$stage/etc/"; fi
done
[ -e "$stage/etc/libibverbs.d/rxe.driver" ] ||
  { mkdir -p "$stage/etc/libibverbs.d" && echo "driver rxe" \
    >"$stage/etc/libibverbs.d/rxe.driver"; }
# _rpc: the user rpcbind runs as.
printf 'root:x:0:0:root:/root:/bin/sh\n_rpc:x:100:65534::/run/rpcbind:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' \
  >"$stage/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$stage/etc/group"
printf '127.0.0.1 localhost\n192.0.2.1 rxe-guest\n::1 localhost\n' \
  >"$stage/etc/hosts"
echo rxe-guest >"$stage/etc/hostname"
: >"$stage/etc/fstab"
ln -s ../proc/self/mounts "$stage/etc/mtab"
(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
  cpio --quiet -o -H newc -R 0:0) >"$out/initramfs.cpio.tmp"
mv "$out/initramfs.cpio.tmp" "$out/initramfs.cpio"
cp "$kdir/vmlinuz" "$out/vmlinuz"
echo "$release" >"$out/kernel-release"
