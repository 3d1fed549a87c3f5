# Sourced by the kernel.*wireshark checks (check-capture.sh,
# check-nfs3d-capture.sh): what every capture of a kernel session must pass
# before the checks of its own protocol. `capture_checks_start WRITER`
# needs $capture; it defines fail and count, sets $tshark and $frames, and
# checks that tshark decodes every frame as RPC-over-RDMA with no
# malformed frame and no expert warning or error. `capture_checks_finish`
# ends the script with the verdict.

capture_checks_start() {
  local writer=$1
  tshark="$(command -v tshark)" || {
    echo "FAIL: tshark not found (scripts/install-deps.sh installs it)"
    exit 1
  }
  [ -s "$capture" ] || {
    echo "FAIL: no capture at $capture ($writer writes it)"
    exit 1
  }
  failures=0
  frames=$(count "frame")
  local rpcordma
  rpcordma=$(count "rpcordma")
  echo "frames $frames, RPC-over-RDMA $rpcordma, ONC RPC $(count rpc)"
  [ "$frames" -gt 0 ] || fail "the capture holds no frame"
  [ "$rpcordma" -eq "$frames" ] ||
    fail "$((frames - rpcordma)) frames not decoded as RPC-over-RDMA"
  local bad
  bad=$("$tshark" -r "$capture" \
    -Y "_ws.malformed || _ws.expert.severity >= 6291456" 2>/dev/null)
  if [ -n "$bad" ]; then
    echo "$bad"
    fail "malformed frames or expert warnings"
  fi
}

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

count() { "$tshark" -r "$capture" -Y "$1" 2>/dev/null | wc -l; }

capture_checks_finish() {
  if [ "$failures" -gt 0 ]; then
    echo "$failures check(s) failed"
    exit 1
  fi
  echo "tshark decodes all $frames frames"
}
