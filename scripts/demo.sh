#!/usr/bin/env bash
# demo.sh: build the mutex_o2 patient (four threads stuck on a mutex main
# holds), start it, wait until it says "ready", run `hangdoc attach` on it,
# and kill it whatever happens. Extra arguments go to hangdoc
# (scripts/demo.sh --format json).
#
# Needs bin/hangdoc (make build), a C compiler, and ptrace permission over
# one's own processes (root, CAP_SYS_PTRACE, or kernel.yama.ptrace_scope 0).
set -euo pipefail
cd "$(dirname "$0")/.."

HANGDOC=${HANGDOC:-bin/hangdoc}
CC=${CC:-gcc}
work=$(mktemp -d "${TMPDIR:-/tmp}/hangdoc-demo.XXXXXX")
pid=""

cleanup() {
	if [ -n "$pid" ]; then
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

if [ ! -x "$HANGDOC" ]; then
	echo "demo: $HANGDOC not built; run 'make build' (or 'make demo')" >&2
	exit 1
fi

"$CC" -O2 -fomit-frame-pointer -pthread -o "$work/mutex_o2" testdata/patients/mutex_o2.c
"$work/mutex_o2" >"$work/stdout" 2>"$work/stderr" &
pid=$!

for _ in $(seq 100); do
	grep -qx ready "$work/stdout" && break
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "demo: the patient exited before it was ready:" >&2
		cat "$work/stderr" >&2
		exit 1
	fi
	sleep 0.1
done
if ! grep -qx ready "$work/stdout"; then
	echo "demo: the patient did not say ready within 10 s" >&2
	exit 1
fi

echo "demo: mutex_o2 (pid $pid) is hung: four threads wait for a mutex main holds, main waits in pthread_join."
echo "demo: $HANGDOC attach $pid $*"
echo
rc=0
"$HANGDOC" attach "$pid" "$@" || rc=$?
echo
case $rc in
0) echo "demo: hangdoc exited 0 (report written, no hang named)" ;;
1) echo "demo: hangdoc exited 1 (a hang was named), as expected" ; rc=0 ;;
*) echo "demo: hangdoc failed (exit $rc)" >&2 ;;
esac
exit "$rc"
