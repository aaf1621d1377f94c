#!/usr/bin/env bash
# Captures the variants of lldb and gdb output kept under testdata/dumps
# (lldb/variant_*, gdb/variant_*): the abba patient (two threads in an
# ABBA deadlock, -O2 -g, and a stripped copy) is started in
# /tmp/dumpgen-variants, and once it prints "ready" each command below is
# attached to it in turn (each with a timeout), then it is killed. A core
# written by gdb's gcore is read by lldb too.
#
#   scripts/capture-variant-dumps.sh [OUTDIR]   (default: testdata/dumps)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/testdata/dumps}
work=/tmp/dumpgen-variants
mkdir -p "$work" "$out/lldb" "$out/gdb"
cd "$work"
gcc -O2 -g -pthread -o abba "$root/testdata/patients/abba.c"
cp abba abba_stripped && strip abba_stripped
export DEBUGINFOD_URLS=
pid=
cleanup() { if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

start() {
	"./$1" >"$work/$1.stdout" 2>&1 &
	pid=$!
	for _ in $(seq 100); do grep -q '^ready' "$work/$1.stdout" 2>/dev/null && break; sleep 0.1; done
	grep -q '^ready' "$work/$1.stdout" || { echo "$1: not ready" >&2; exit 1; }
	sleep 0.3 # every thread asleep in its final wait
}

t="timeout -k 5 60"
gdbb() { $t gdb -batch -nx -iex 'set debuginfod enabled off' -ex 'set pagination off' "$@"; }

start abba
$t lldb -p "$pid" --batch -o 'thread backtrace all -c 3' >"$out/lldb/variant_tba_count3.txt" 2>&1 || true
$t lldb -p "$pid" --batch -o 'thread select 2' -o 'bt' >"$out/lldb/variant_bt_one.txt" 2>&1 || true
$t lldb -p "$pid" --batch -o 'thread backtrace 2 3' >"$out/lldb/variant_tb_2_3.txt" 2>&1 || true
$t lldb -p "$pid" --batch -o 'thread list' >"$out/lldb/variant_thread_list.txt" 2>&1 || true
gdbb -ex 'info threads' -ex 'thread apply all bt' -p "$pid" >"$out/gdb/variant_info_threads_bt.txt" 2>&1 || true
gdbb -ex 'info threads' -p "$pid" >"$out/gdb/variant_info_threads.txt" 2>&1 || true
rm -f "$work/core.abba"
gdbb -ex "gcore $work/core.abba" -p "$pid" >/dev/null 2>&1 || true
cleanup
$t lldb --core "$work/core.abba" "$work/abba" --batch -o 'bt all' >"$out/lldb/variant_core_bt_all.txt" 2>&1 || true

start abba_stripped
$t lldb -p "$pid" --batch -o 'bt all' >"$out/lldb/variant_stripped_bt_all.txt" 2>&1 || true
gdbb -ex 'thread apply all bt' -p "$pid" >"$out/gdb/variant_stripped.txt" 2>&1 || true
cleanup
pid=
rm -f "$work/core.abba"
echo "captured under $out/lldb/variant_* and $out/gdb/variant_*"
