#!/bin/bash
# Regenerates testdata/dumps/goroutines/ from the patients in this folder:
# builds each with the machine's go (and go 1.19 for the old format when
# /usr/lib/go-1.19 is there: apt-get install golang-1.19-go), runs it
# until it prints "stuck", and takes its goroutine dump: SIGQUIT with
# GOTRACEBACK=all / crash / unset, pprof debug=2, runtime.Stack,
# debug.Stack, the runtime's own deadlock report, and `go test -timeout`.
# Every process started is killed by pid. SLOW=0 skips the dumps that
# wait over two minutes so that the wait durations show ("2 minutes").
#
#   bash testdata/gorun/gen.sh            # from the repository root
#   bash testdata/gorun/gen.sh leak_sigquit.txt server_sigquit.txt
#                                         # only these dumps (no pasted variants)
set -euo pipefail
only=" $* "
# wanted FILE: FILE is to be written this run
wanted() { [ "$only" = "  " ] || [[ "$only" == *" $1 "* ]]; }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/module.sh"
out=$here/../dumps/goroutines
build=/tmp/hangdoc-gorun
mkdir -p "$out" "$build"
ulimit -c 0 # GOTRACEBACK=crash aborts: no core files
pids=()
cleanup() { for p in "${pids[@]:-}"; do [ -n "$p" ] && kill -KILL "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# build GO NAME SUFFIX: a module of its own under $build
buildone() {
	local gobin=$1 name=$2 sfx=$3 dir=$build/$2$3
	gomodule "$here" "$name" "$dir"
	(cd "$dir" && GOFLAGS= "$gobin" build -o "$name" .)
}

# take NAME SUFFIX DUMPFILE SECONDS ENV...: run until "stuck", wait, SIGQUIT
take() {
	local name=$1 sfx=$2 file=$3 wait=$4
	shift 4
	wanted "$file" || return 0
	local dir=$build/$name$sfx
	rm -f "$dir/stdout" "$dir/stderr"
	(cd "$dir" && exec env "$@" "./$name" >stdout 2>stderr) &
	local pid=$!
	pids+=("$pid")
	for _ in $(seq 100); do grep -q stuck "$dir/stdout" 2>/dev/null && break; sleep 0.1; done
	grep -q stuck "$dir/stdout" || { echo "$name: never stuck" >&2; return 1; }
	sleep "$wait"
	# the program runs as a child of the subshell's exec: $pid is it
	kill -QUIT "$pid"
	wait "$pid" || true
	cp "$dir/stderr" "$out/$file"
	echo "$file: $(wc -l <"$out/$file") lines"
}

# self NAME SUFFIX DUMPFILE MODE: the program writes its own dump
self() {
	local name=$1 sfx=$2 file=$3 mode=$4 dir=$build/$1$2
	wanted "$file" || return 0
	(cd "$dir" && HANGDOC_DUMP=$mode timeout 20 "./$name" | sed 1d >"$out/$file")
	echo "$file: $(wc -l <"$out/$file") lines"
}

GO=${GO:-go}
GO119=/usr/lib/go-1.19/bin/go
for n in abba rlock chansend waitgroup leak deadlock server leftlocked; do buildone "$GO" $n ""; done
if [ -x $GO119 ]; then for n in abba rlock; do buildone $GO119 $n -go119; done; fi

if [ "${SLOW:-1}" = 1 ]; then
	# wait over two minutes, in parallel, so the headers carry ", 2 minutes"
	# (each in a subshell that kills its patient however it ends)
	bgtake() { (trap cleanup EXIT; take "$@") & }
	bgtake abba "" abba_sigquit.txt 130 GOTRACEBACK=all
	bgtake rlock "" rlock_sigquit.txt 130 GOTRACEBACK=all
	bgtake chansend "" chansend_sigquit.txt 130
	bgtake waitgroup "" waitgroup_sigquit.txt 130 GOTRACEBACK=all
	# 1,000 goroutines, not the patient's 10,000: a 7 MB dump is too much to keep
	bgtake leak "" leak_sigquit.txt 70 GOTRACEBACK=all HANGDOC_LEAK_N=1000
	bgtake leftlocked "" leftlocked_sigquit.txt 70 GOTRACEBACK=all
	if [ -x $GO119 ]; then bgtake abba -go119 go119_abba_sigquit.txt 70 GOTRACEBACK=all; fi
	wait
fi
take server "" server_sigquit.txt 1 GOTRACEBACK=all
take abba "" abba_sigquit_crash.txt 1 GOTRACEBACK=crash
take abba "" abba_sigquit_system.txt 1 GOTRACEBACK=system
if [ -x $GO119 ]; then take rlock -go119 go119_rlock_sigquit.txt 1 GOTRACEBACK=all; fi
self abba "" abba_pprof_debug2.txt pprof
self abba "" abba_runtime_stack.txt stack
self waitgroup "" waitgroup_debug_stack.txt debug

[ "$only" = "  " ] || exit 0 # the rest is written only when all is

# the runtime's own detector
(cd $build/deadlock && ./deadlock 2>"$out/deadlock_fatal.txt" || true)
echo "deadlock_fatal.txt: $(wc -l <"$out/deadlock_fatal.txt") lines"

# go test -timeout
gotest() {
	local gobin=$1 file=$2 dir=$build/testtimeout$3
	mkdir -p "$dir"
	cp "$here/testtimeout/hang_test.go" "$dir/"
	cp "$here/testtimeout/go.mod.txt" "$dir/go.mod"
	(cd "$dir" && GOFLAGS= "$gobin" test -timeout 2s . >"$out/$file" 2>&1 || true)
	echo "$file: $(wc -l <"$out/$file") lines"
}
gotest "$GO" gotest_timeout.txt ""
if [ -x $GO119 ]; then gotest $GO119 go119_gotest_timeout.txt -go119; fi

# Pasted variants, derived from the dumps above the way people paste them.
derive() {
	# a bug report: prose, a Markdown fence, prose
	{
		printf 'Our transfer service hangs after a few minutes under load; CPU is at 0%%.\n'
		printf 'This is what `kill -QUIT` printed (GOTRACEBACK=all):\n\n```\n'
		cat "$out/abba_sigquit.txt"
		printf '```\n\nAny idea? The goroutines in `transfer` never finish.\n'
	} >"$out/pasted_issue.md"
	# an e-mail reply quoting the dump
	{
		printf 'On Mon, Nov 24, 2025 at 10:02 AM Dana <dana@example.com> wrote:\n'
		sed 's/^/> /; s/^> $/>/' "$out/rlock_sigquit.txt"
		printf '\nThanks, that is the RLock inside get(), see goroutine 6.\n'
	} >"$out/quoted_reply.txt"
	# a CI log: timestamps, CRLF, colours, the runner's own lines
	{
		printf '2025-11-29T15:28:01.0000000Z ##[group]Run go test ./...\r\n'
		printf '2025-11-29T15:28:01.1000000Z go: downloading example.com/dep v1.2.3\r\n'
		awk '{ printf "2025-11-29T15:28:03.%07dZ %s\r\n", NR, $0 }' "$out/gotest_timeout.txt" |
			sed 's/Z FAIL\t/Z \x1b[31mFAIL\x1b[0m\t/'
		printf '2025-11-29T15:28:04.0000000Z ##[error]Process completed with exit code 1.\r\n'
	} >"$out/ci_log.txt"
	# cut mid-line: the paste ends inside the blocked goroutine's frame
	awk '/^runtime\.chansend1\(/ { print substr($0, 1, 33); exit } { print }' "$out/chansend_sigquit.txt" |
		head -c -1 >"$out/cut_midline.txt"
	# a web form that ate the leading tabs
	sed 's/^\t//' "$out/deadlock_fatal.txt" >"$out/no_tabs.txt"
	# a service log with two dumps: debug.Stack logged, later a SIGQUIT
	{
		printf 'level=info msg="starting workers" n=2\n'
		printf 'level=warn msg="wait is slow, stack follows"\n'
		cat "$out/waitgroup_debug_stack.txt"
		printf 'level=info msg="still waiting"\n'
		cat "$out/waitgroup_sigquit.txt"
	} >"$out/log_two_dumps.txt"
	echo "pasted variants derived"
}
derive
