# hangdoc: `make demo` to see it work, `make test` to check it.
GO        ?= go
FUZZTIME  ?= 30s
BENCHTIME ?= 1s
TIMEOUT   ?= 9m

.PHONY: all build test bench demo lint fuzz clean

all: build

build:
	$(GO) build -o bin/hangdoc ./cmd/hangdoc

test:
	$(GO) test -timeout $(TIMEOUT) ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) -benchmem -timeout $(TIMEOUT) ./...

# Builds hangdoc and a patient that hangs on a mutex, attaches to it, and
# kills the patient however the run ends.
demo: build
	scripts/demo.sh

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt -l: not formatted:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Runs every Fuzz* target of every package for $(FUZZTIME) each.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for fz in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$fz ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$fz\$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

clean:
	rm -rf bin
