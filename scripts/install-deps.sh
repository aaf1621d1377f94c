#!/usr/bin/env bash
# Installs the Debian packages hangdoc's tests and benchmarks need: the
# lists under scripts/deps/*.txt, one package a line with a file it
# installs (compilers for the patients; gdb, lldb and eu-stack to
# cross-check against and to produce the dumps under testdata/dumps;
# python3 and numpy for the Python patients; libc6-dbg so that libc's
# static functions have names; graphviz for the DOT reports; Go 1.19 for
# a runtime from before 1.20; and whatever each list's header says).
# Idempotent: when everything is there it touches nothing; apt-get update
# runs only when something is missing.
set -euo pipefail
cd "$(dirname "$0")"

missing=()
present=()
while read -r pkg probe _; do
	case "$pkg" in '' | '#'*) continue ;; esac
	if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' &&
		[ -e "$probe" ]; then
		present+=("$pkg")
	else
		missing+=("$pkg")
	fi
done < <(cat deps/*.txt)

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: nothing to install (${#present[@]} packages present)"
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
