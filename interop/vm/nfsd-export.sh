#!/usr/bin/env bash
# The NFS export of the Soft-RoCE test VM, without nfs-utils: this script
# plays rpc.mountd's part for one export. guest-init.sh installs it in the
# initramfs as /nfsd-export and, for --services nfsd, runs
#
#   nfsd-export.sh write   before nfsd starts: writes every entry the
#                          clients of the export need into the kernel's
#                          caches, and fails if the kernel refuses one;
#   nfsd-export.sh serve   in the background until the VM powers off:
#                          answers each upcall of those caches.
#
# The export is the tmpfs /srv/nfs as the NFSv4 pseudo-root, the
# equivalent of the exports(5) line
#
#   /srv/nfs 192.0.2.0/24(rw,fsid=0,no_root_squash,insecure,no_subtree_check,sync,no_wdelay,sec=sys:none)
#            127.0.0.1(rw,fsid=0,no_root_squash,insecure,no_subtree_check,sync,no_wdelay,sec=sys:none)
#
# nfsd looks exports up in three caches (/proc/net/rpc/CACHE). On a miss it
# queues a request line on CACHE/channel for rpc.mountd and waits up to 5 s
# for the reply, a line written to the same channel. Since Linux 5.7 these
# three caches queue the request even when nothing reads the channel; the
# request then gets NFS4ERR_DELAY (an unknown client address: the
# connection is closed), and every retry waits 5 s again, as long as
# nothing answers (measured: a mount retried PUTROOTFH every 5 s for the
# whole minute it was given). Hence both modes: `write` so that
# nothing a client of this export does waits for an answer, `serve` for
# everything else (a filehandle with an fsid nfsd never issued, an
# address outside the export, the caches refilled after the nfsd threads
# were restarted, which purges nfsd.export and nfsd.fh).
#
# Request -> reply, per cache (EXPIRY: wall-clock seconds):
#   auth.unix.ip  "nfsd ADDRESS" -> "nfsd ADDRESS EXPIRY DOMAIN"
#                 The client address maps to a domain, named (as
#                 rpc.mountd does) after the client field of the export:
#                 192.0.2.1-254 -> 192.0.2.0/24, 127.0.0.1 -> 127.0.0.1.
#   nfsd.export   "DOMAIN PATH" -> "DOMAIN PATH EXPIRY FLAGS ANONUID
#                 ANONGID FSID secinfo N FLAVOR FLAGS..."
#                 FLAGS are NFSEXP_* of <linux/nfsd/export.h>:
#                 INSECURE_PORT 0x2 | NOSUBTREECHECK 0x400 | FSID 0x2000 =
#                 9218; rw, sync, no_root_squash and no_wdelay are the
#                 absence of READONLY 0x1, ASYNC 0x10, ROOTSQUASH 0x4 and
#                 GATHERED_WRITES 0x20. secinfo lists AUTH_SYS (1) and
#                 AUTH_NONE (0) with the same flags (the kernel refuses
#                 per-flavor flags that differ in more than ro and the
#                 squash/insecure bits). Anonymous (AUTH_NONE) is uid/gid
#                 65534. FSID 0 makes the export the pseudo-root.
#   nfsd.fh       "DOMAIN FSIDTYPE \xFSID" -> "... EXPIRY PATH"
#                 Which directory a filehandle's fsid names. With fsid=0
#                 every filehandle of the export carries fsid type 1
#                 (FSID_NUM) and the 4-byte number 0; PUTROOTFH looks up
#                 exactly that key.
# Anything else gets the request line plus an expiry and nothing more,
# which the kernel stores as a negative entry: nfsd then answers as a
# server with nothing exported there (NFS4ERR_STALE for a filehandle,
# NFS4ERR_NOENT for PUTROOTFH or LOOKUPP above the root, AUTH_BADCRED for an
# address). `write` also stores the negative entries for / and /srv, the
# parents nfsd asks for when a client steps above the root.
#
# Positive entries never expire (2147483647, in 2038); negative ones after
# 60 s, so a lookup asks again later. `serve` logs each answer to the
# kernel log (vm-dmesg.log) as "nfsd-export: CACHE "REQUEST": ANSWER".
# Reading an empty channel returns end-of-file at once rather than
# blocking, and bash cannot poll(2), so `serve` checks the channels every
# 0.2 s (nfsd waits 5 s). bash reads the channels one byte per read(2)
# because they are not seekable; the kernel keeps the position within a
# request between reads.
set -u

readonly export_path=/srv/nfs
readonly flags=9218
readonly forever=2147483647
readonly negative_ttl=60
readonly caches=(auth.unix.ip nfsd.export nfsd.fh)

usage() {
  echo "usage: nfsd-export.sh write|serve" >&2
  exit 2
}

# Sets reply to the answer for REQUEST of cache CACHE, and answer to
# "positive" or "negative".
answer_for() {
  local cache="$1" request="$2" now domain=""
  local -a f
  read -r -a f <<<"$request"
  reply=""
  case "$cache" in
    auth.unix.ip)
      if [ "${#f[@]}" -eq 2 ] && [ "${f[0]}" = nfsd ]; then
        if [ "${f[1]}" = 127.0.0.1 ]; then
          domain=127.0.0.1
        elif [[ "${f[1]}" =~ ^192\.0\.2\.([0-9]{1,3})$ ]] &&
          ((10#${BASH_REMATCH[1]} >= 1 && 10#${BASH_REMATCH[1]} <= 254)); then
          domain=192.0.2.0/24
        fi
        [ -z "$domain" ] || reply="$request $forever $domain"
      fi
      ;;
    nfsd.export)
      if [ "${#f[@]}" -eq 2 ] && known_domain "${f[0]}" &&
        [ "${f[1]}" = "$export_path" ]; then
        reply="$request $forever $flags 65534 65534 0 secinfo 2 1 $flags 0 $flags"
      fi
      ;;
    nfsd.fh)
      if [ "${#f[@]}" -eq 3 ] && known_domain "${f[0]}" &&
        [ "${f[1]}" = 1 ] && [ "${f[2]}" = '\x00000000' ]; then
        reply="$request $forever $export_path"
      fi
      ;;
  esac
  if [ -n "$reply" ]; then
    answer=positive
  else
    printf -v now '%(%s)T' -1
    reply="$request $((now + negative_ttl))"
    answer="negative for $negative_ttl s"
  fi
}

known_domain() {
  [ "$1" = 192.0.2.0/24 ] || [ "$1" = 127.0.0.1 ]
}

# Writes the answer for each request line on stdin to cache $1's channel,
# one write(2) per line.
write_cache() {
  local cache="$1" request fd status=0
  exec {fd}>"/proc/net/rpc/$cache/channel" || return 1
  while IFS= read -r request; do
    answer_for "$cache" "$request"
    echo "$cache <- $reply"
    printf '%s\n' "$reply" >&"$fd" || status=1
  done
  exec {fd}>&-
  return "$status"
}

write_all() {
  local i domain status=0
  # auth.unix.ip first: it creates the domains the other two name.
  for ((i = 1; i <= 254; i++)); do echo "nfsd 192.0.2.$i"; done |
    write_cache auth.unix.ip >/dev/null || status=1
  echo "auth.unix.ip <- nfsd 192.0.2.{1..254} $forever 192.0.2.0/24"
  write_cache auth.unix.ip <<<"nfsd 127.0.0.1" || status=1
  for domain in 192.0.2.0/24 127.0.0.1; do
    printf '%s %s\n' "$domain" "$export_path" "$domain" / "$domain" /srv |
      write_cache nfsd.export || status=1
    write_cache nfsd.fh <<<"$domain 1 \\x00000000" || status=1
  done
  return "$status"
}

serve() {
  local i request fd kmsg tick tick_fd
  local -a fds=()
  for i in "${!caches[@]}"; do
    exec {fd}<>"/proc/net/rpc/${caches[$i]}/channel" || exit 1
    fds+=("$fd")
  done
  # A FIFO nobody writes to: `read -t` on it sleeps without a process.
  tick="$(mktemp -u /run/nfsd-export.XXXXXX)"
  mkfifo "$tick" || exit 1
  exec {tick_fd}<>"$tick"
  rm -f "$tick"
  exec {kmsg}>/dev/kmsg || kmsg=2
  while :; do
    for i in "${!caches[@]}"; do
      while IFS= read -r -u "${fds[$i]}" request && [ -n "$request" ]; do
        answer_for "${caches[$i]}" "$request"
        printf '%s\n' "$reply" >&"${fds[$i]}" || answer="refused by the kernel"
        printf 'nfsd-export: %s "%s": %s\n' "${caches[$i]}" "$request" \
          "$answer" >&"$kmsg"
      done
    done
    read -r -t 0.2 -u "$tick_fd" _
  done
}

[ $# -eq 1 ] || usage
case "$1" in
  write) write_all ;;
  serve) serve ;;
  *) usage ;;
esac
