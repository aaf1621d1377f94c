#!/usr/bin/env bash
# Captures the lldb, eu-stack and gdb dumps under testdata/dumps from the
# project's patients: each patient is built (with the flags the tests use),
# started in /tmp/dumpgen, and once it prints "ready" gdb, lldb and
# eu-stack (in several modes) are attached to the same process one after
# the other, each with a timeout; then the patient is killed.
#
#   scripts/capture-tool-dumps.sh [OUTDIR]   (default /tmp/dumpgen/out)
#
# Files are named TOOL_PATIENT.txt (gdb, lldb: `thread list` + `bt all`,
# lldbtba: `thread backtrace all` alone, eu: plain, euv: -v, eum: -m,
# eusi: -s -i, eubl: -b -l). Which of them are kept under testdata/dumps,
# and under which names, is listed at the end. The dumps hold the pids and
# addresses of the run: a new capture means new golden files
# (go test ./stacks -run Golden -update).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pat=$root/testdata/patients
work=/tmp/dumpgen
out=${1:-$work/out}
mkdir -p "$work" "$out"
cd "$work"

O2="-O2 -fomit-frame-pointer -pthread"
O0g="-O0 -g -pthread"
O2g="-O2 -g -pthread"
gcc $O2 -o mutex_o2 "$pat/mutex_o2.c"
gcc $O0g -o mutex_o0g "$pat/mutex_o2.c"
g++ $O2g -o cxx_mutex "$pat/cxx_mutex.cpp"
gcc $O2g -o sighandler "$pat/sighandler.c"
gcc $O2g -o threads200 "$pat/threads200.c"
gcc $O2g -o abba "$pat/abba.c"

export DEBUGINFOD_URLS=
pid=
cleanup() { if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

# pstack as Red Hat's gdb package ships it (/usr/bin/pstack, also installed
# as gstack): gdb's `thread apply all bt` (`bt` for one thread), filtered
# down to its "Thread" and "#" lines. Debian 12 packages neither.
pstack() {
	local backtrace=bt
	if [ "$(ls "/proc/$1/task" | wc -l)" -gt 1 ]; then
		backtrace="thread apply all bt"
	fi
	timeout -k 5 60 gdb --quiet -nx -iex 'set debuginfod enabled off' "/proc/$1/exe" "$1" <<-EOT 2>&1 |
		set width 0
		set height 0
		set pagination no
		$backtrace
	EOT
		sed -n -e 's/^\((gdb) \)*//' -e '/^#/p' -e '/^Thread/p'
}

capture() {
	local name=$1
	shift
	"$@" >"$work/$name.stdout" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		grep -q '^ready' "$work/$name.stdout" 2>/dev/null && break
		sleep 0.1
	done
	grep -q '^ready' "$work/$name.stdout" || { echo "$name: not ready" >&2; exit 1; }
	sleep 0.3 # every thread asleep in its final wait
	local t="timeout -k 5 60"
	$t gdb -batch -nx -iex 'set debuginfod enabled off' -ex 'set pagination off' \
		-ex 'thread apply all bt' -p "$pid" >"$out/gdb_$name.txt" 2>&1 || true
	$t lldb -p "$pid" --batch -o 'thread list' -o 'bt all' >"$out/lldb_$name.txt" 2>&1 || true
	$t lldb -p "$pid" --batch -o 'thread backtrace all' >"$out/lldbtba_$name.txt" 2>&1 || true
	$t eu-stack -p "$pid" >"$out/eu_$name.txt" 2>&1 || true
	$t eu-stack -v -p "$pid" >"$out/euv_$name.txt" 2>&1 || true
	$t eu-stack -m -p "$pid" >"$out/eum_$name.txt" 2>&1 || true
	$t eu-stack -s -i -p "$pid" >"$out/eusi_$name.txt" 2>&1 || true
	$t eu-stack -b -l -p "$pid" >"$out/eubl_$name.txt" 2>&1 || true
	pstack "$pid" >"$out/pstack_$name.txt" || true
	cleanup
	pid=
	echo "$name: captured"
}

capture mutex_o2 ./mutex_o2
capture mutex_o0g ./mutex_o0g
capture cxx_mutex ./cxx_mutex
capture sighandler ./sighandler
capture threads10 ./threads200 10
capture abba ./abba

# Kept under testdata/dumps (the pasted_issue.md files are edited by hand
# from lldb_abba/lldb_mutex_o2 and eusi_abba/euv_sighandler):
#   lldb/{mutex_o2,mutex_o0g,cxx_mutex,sighandler,threads10,abba}.txt  <- lldb_*.txt
#   lldb/abba_tba.txt                                                  <- lldbtba_abba.txt
#   eu-stack/{mutex_o2,cxx_mutex,sighandler,threads10}.txt             <- eu_*.txt
#   eu-stack/{mutex_o2,cxx_mutex,sighandler}_v.txt                     <- euv_*.txt
#   eu-stack/{mutex_o2,threads10}_m.txt                                <- eum_*.txt
#   eu-stack/{mutex_o0g,abba}_si.txt                                   <- eusi_*.txt
#   eu-stack/abba_bl.txt                                               <- eubl_abba.txt
#   gdb/xcheck_{mutex_o2,cxx_mutex,sighandler}.txt                     <- gdb_*.txt
#     (the same processes as the lldb and eu-stack dumps: TestToolsAgree)
#   gdb/pstack_{mutex_o2,threads10}.txt                                <- pstack_*.txt
#     (pstack prints gdb's format: it is read as a gdb dump)
