#!/usr/bin/env bash
# Usage: lifeline.sh <data dir> <java args...>
# Runs the JVM in the background and ties its life to this script's stdin: whoever
# started us holds the write end of that pipe, so if it dies without cleaning up (even
# by SIGKILL) the pipe reaches EOF and the broker is stopped and its data dir removed,
# instead of a 1 GB JVM being left behind.
set -uo pipefail

data_dir=$1
shift

exec 3<&0 </dev/null
java "$@" 3<&- &
jpid=$!

(
  while read -r -u 3 _; do :; done
  kill -TERM "$jpid" 2>/dev/null
  for _ in $(seq 1 150); do
    kill -0 "$jpid" 2>/dev/null || break
    sleep 0.2
  done
  kill -KILL "$jpid" 2>/dev/null
  case "$data_dir" in
    */gregor-ref-kafka-*) rm -rf -- "$data_dir" ;;
  esac
) &
exec 3<&-

trap 'kill -TERM "$jpid" 2>/dev/null' TERM INT HUP

rc=0
while kill -0 "$jpid" 2>/dev/null; do
  wait "$jpid"
  rc=$?
done
exit "$rc"
