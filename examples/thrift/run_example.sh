#!/bin/sh
# Runs the object store example as two processes: the server listening on
# URI, then the client against the address it announced; the server is
# stopped with SIGTERM. The exit status is the client's, or the server's
# when it failed.
#   run_example.sh SERVER CLIENT URI
set -u
server=$1
client=$2
uri=$3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$server" "$uri" >"$out" 2>&1 &
pid=$!
listening=""
for _ in $(seq 1 200); do
  listening=$(sed -n 's/^listening on //p' "$out")
  [ -n "$listening" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then break; fi
  sleep 0.05
done
if [ -z "$listening" ]; then
  echo "run_example.sh: the server did not start:" >&2
  cat "$out" >&2
  kill "$pid" 2>/dev/null
  exit 1
fi
"$client" "$listening"
status=$?
kill -TERM "$pid"
wait "$pid"
server_status=$?
cat "$out"
if [ "$status" -eq 0 ] && [ "$server_status" -ne 0 ]; then
  echo "run_example.sh: the server exited with $server_status" >&2
  status=$server_status
fi
exit "$status"
