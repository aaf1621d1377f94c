#!/usr/bin/env bash
# Installs what hangdoc's tests and benchmarks need: compilers for the
# patients, gdb, lldb and eu-stack (elfutils) to cross-check and compare against
# (and to produce the dumps under testdata/dumps),
# python3 for the Python patients (python3-numpy for the numpy-after-fork
# one), make, libc6-dbg so that libc's
# static functions have names (for hangdoc and for gdb alike), graphviz
# so the report tests can have `dot` read the DOT reports, and Go 1.19
# (golang-1.19-go) for a Go patient built with a runtime from before 1.20. Idempotent: when everything is
# already there it touches nothing; apt-get update runs only when something
# is missing.
set -euo pipefail

# package name -> a file it installs (how we tell it is there).
declare -A probe=(
	[gcc]=/usr/bin/gcc
	[g++]=/usr/bin/g++
	[gdb]=/usr/bin/gdb
	[elfutils]=/usr/bin/eu-stack
	[lldb]=/usr/bin/lldb
	[python3]=/usr/bin/python3
	[python3-dev]=/usr/bin/python3-config
	[python3-numpy]=/usr/lib/python3/dist-packages/numpy/__init__.py
	[make]=/usr/bin/make
	[libc6-dbg]=/usr/share/doc/libc6-dbg
	[graphviz]=/usr/bin/dot
	[golang-1.19-go]=/usr/lib/go-1.19/bin/go
)

missing=()
for pkg in gcc g++ gdb lldb elfutils python3 python3-dev python3-numpy make libc6-dbg graphviz golang-1.19-go; do
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
		[ ! -e "${probe[$pkg]}" ]; then
		missing+=("$pkg")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: nothing to install (gcc g++ gdb lldb elfutils python3 python3-dev python3-numpy make libc6-dbg graphviz golang-1.19-go present)"
	exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	sudo=(sudo)
fi

echo "install-deps: installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps: installed: ${missing[*]}"
