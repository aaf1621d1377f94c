# hangdoc: `make demo` to see it work, `make test` to check it.
GO        ?= go
FUZZTIME  ?= 30s
BENCHTIME ?= 1s
TIMEOUT   ?= 12m

.PHONY: all build release deps test test-arm64 bench demo lint fuzz soak clean

all: build

# The version every binary reports (hangdoc version, --version, the last
# line of a markdown report): the nearest tag, commits since, the commit.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS  = -X main.version=$(VERSION)
BIN     ?= bin/hangdoc

# Static (CGO_ENABLED=0): the binary runs on any Linux of its
# architecture, whatever its libc, or none (a distroless container).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/hangdoc

# Static binaries for each architecture and their SHA-256 sums, in
# $(DIST): hangdoc-VERSION-linux-ARCH and SHA256SUMS.
DIST           ?= dist
RELEASE_ARCHES ?= amd64 arm64
release:
	@mkdir -p $(DIST)
	@set -e; for arch in $(RELEASE_ARCHES); do \
		echo "== linux/$$arch"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' \
			-o $(DIST)/hangdoc-$(VERSION)-linux-$$arch ./cmd/hangdoc; \
	done
	cd $(DIST) && sha256sum hangdoc-$(VERSION)-linux-* > SHA256SUMS && cat SHA256SUMS

# What the tests need (compilers, debuggers, python3, numpy, Go 1.19);
# touches nothing when all is there.
deps:
	bash scripts/install-deps.sh

# -count=1: these tests read live processes and the machine; a cached
# pass says nothing about this run.
test: deps
	$(GO) test -count=1 -timeout $(TIMEOUT) ./...

# dlv, for the Go freeze benchmark's comparison, built from the module
# cache so that hangdoc's go.sum stays as it is.
DLV ?= /tmp/hangdoc-dlv
$(DLV):
	cd $$($(GO) env GOMODCACHE)/github.com/go-delve/delve@v1.27.2 && $(GO) build -o $(DLV) ./cmd/dlv || \
		echo "dlv not built: BenchmarkGoFreeze will skip it"

# panicparse's pp, the goroutine-dump peer of `make bench`.
PP ?= /tmp/hangdoc-pp/pp
$(PP):
	GOBIN=$(dir $(PP)) $(GO) install github.com/maruel/panicparse/v2/cmd/pp@v2.5.0 || \
		echo "pp not built: the analyze table will not compare goroutine dumps"

# Go benchmarks (unwinding, module loading, parsing, the freeze of a Go
# program with 10,000 goroutines against dlv); the analyze table:
# hangdoc on 32 and 100 MB gdb and goroutine dumps against pt-pmp and
# panicparse on the same files, and on inputs that are not dumps; then
# the freeze table: how long one attach stops the threads of 10-, 200-,
# 2000- and 10000-thread patients, side by side with gdb and eu-stack on
# the same process.
bench: deps build $(DLV) $(PP)
	HANGDOC_DLV=$(DLV) $(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -benchmem -timeout $(TIMEOUT) ./...
	$(GO) run ./internal/bigdump/cmd/scaletable -hangdoc bin/hangdoc -pp $(PP)
	HANGDOC_FREEZE_TABLE=1 $(GO) test ./attach -run TestFreezeTable -v -count=1 -timeout 15m

# The long proof runs (opt-in; CI runs 100 attaches and 50 kills): 1000
# attaches in one process with hangdoc's heap and fds flat, and 100
# SIGKILLs of hangdoc mid-attach, the target released and undisturbed.
soak:
	HANGDOC_SOAK=1 HANGDOC_KILL_RUNS=100 $(GO) test ./attach -run '^(TestSoak|TestKillDuringAttach)$$' -v -count=1 -timeout 15m

# Builds hangdoc and a patient that hangs on a mutex, attaches to it, and
# kills the patient however the run ends.
demo: build
	scripts/demo.sh

# The arm64 build is vetted too: its live ptrace path cannot run here,
# but it must compile.
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt -l: not formatted:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOARCH=arm64 $(GO) vet ./...

# The arm64-only unit tests (the live register layout), cross-compiled
# and run under qemu-user (scripts/deps/arm64.txt installs it).
ARM64_TEST ?= /tmp/hangdoc-attach-arm64.test
test-arm64: deps
	GOARCH=arm64 CGO_ENABLED=0 $(GO) test -c -o $(ARM64_TEST) ./attach
	qemu-aarch64-static $(ARM64_TEST) -test.run '^TestRegsFromPtraceARM64$$' -test.v

# Runs every Fuzz* target of every package for $(FUZZTIME) each.
fuzz:
	@set -e; log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	for pkg in $$($(GO) list ./...); do \
		for fz in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$fz ($(FUZZTIME))"; \
			rc=0; $(GO) test -run '^$$' -fuzz "^$$fz\$$" -fuzztime $(FUZZTIME) $$pkg > $$log 2>&1 || rc=$$?; cat $$log; \
			if [ $$rc -ne 0 ]; then \
				if grep -q 'context deadline exceeded' $$log && ! grep -q 'Failing input written' $$log; then \
					echo "== $$fz: Go's fuzz coordinator raced its own -fuzztime deadline (golang/go#75804, fixed in Go 1.27; no input failed): once more"; \
					$(GO) test -run '^$$' -fuzz "^$$fz\$$" -fuzztime $(FUZZTIME) $$pkg; \
				else exit $$rc; fi; \
			fi; \
		done; \
	done

clean:
	rm -rf bin dist
