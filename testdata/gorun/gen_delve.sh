#!/bin/bash
# Makes the dumps of testdata/dumps/delve with the real tool: builds dlv
# v1.27.2 (the version in go.mod) from the Go module proxy, builds the
# Go patients of testdata/gorun, runs each until it prints "stuck",
# attaches `dlv attach PID` with the commands below on stdin, and keeps
# what dlv printed (its colours too, as `dlv … > file` writes them).
# `exit` answered `n` ("Would you like to kill the process?") detaches
# and lets the patient run; every patient is then killed by pid.
#
#   bash testdata/gorun/gen_delve.sh        # from the repository root
set -euo pipefail
gorun=$(cd "$(dirname "$0")" && pwd)
. "$gorun/module.sh"
here=$gorun/../dumps/delve
build=/tmp/hangdoc-delve
mkdir -p "$build"
GOBIN=$build go install github.com/go-delve/delve/cmd/dlv@v1.27.2
dlv=$build/dlv
pids=()
cleanup() { for p in "${pids[@]:-}"; do [ -n "$p" ] && kill -KILL "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# start NAME: builds and runs patient NAME until it is stuck; sets pid
start() {
	local name=$1 dir=$build/$1
	gomodule "$gorun" "$name" "$dir"
	(cd "$dir" && GOFLAGS= go build -o "$name" .)
	rm -f "$dir/stdout"
	(cd "$dir" && exec "./$name" >stdout 2>stderr) &
	pid=$!
	pids+=("$pid")
	for _ in $(seq 100); do grep -q stuck "$dir/stdout" 2>/dev/null && break; sleep 0.1; done
	grep -q stuck "$dir/stdout" || { echo "$name: never stuck" >&2; return 1; }
}

# session COMMANDS: dlv's output for the commands (one a line) on $pid
session() {
	printf '%s\nexit\nn\n' "$1" | timeout 60 "$dlv" attach "$pid" --allow-non-terminal-interactive=true 2>&1 || true
}

stop() { kill -KILL "$pid"; wait "$pid" 2>/dev/null || true; }

# take NAME FILE COMMANDS: one session on patient NAME
take() {
	start "$1"
	session "$3" >"$here/$2"
	stop
	echo "$2: $(wc -l <"$here/$2") lines"
}

# ids WAITREASON: the ids of $pid's goroutines waiting for that reason
ids() { session goroutines | sed 's/\x1b\[[0-9;]*m//g' | grep -F "[$1" | sed -E 's/.*Goroutine ([0-9]+) .*/\1/'; }

take abba abba_goroutines_t.txt 'goroutines -t'
take abba abba_goroutines.txt 'goroutines'
take chansend chansend_goroutines_t.txt 'goroutines -t'
take waitgroup waitgroup_goroutines_t.txt 'goroutines -t'
# bt of each goroutine in the cycle, switched to with `goroutine N`
start abba
cmds=""
for g in $(ids sync.Mutex.Lock); do cmds+="goroutine $g"$'\n'"bt"$'\n'; done
session "${cmds%$'\n'}" >"$here/abba_bt.txt" # a blank line would repeat bt
cmds=""
for g in $(ids sync.Mutex.Lock); do cmds+="goroutine $g"$'\n'"stack -full"$'\n'; done
session "${cmds%$'\n'}" >"$here/abba_stack_full.txt"
stop
echo "abba_bt.txt: $(wc -l <"$here/abba_bt.txt") lines"
