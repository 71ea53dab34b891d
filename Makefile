# ingot: `make run` builds and starts a bank; `make test` runs every test.
GO      ?= go
DB      ?= var/ingot.db
BENCHTIME ?= 2s
FUZZTIME  ?= 20s

export PATH := $(PATH):/usr/local/go/bin

.PHONY: build run test bench fuzz clean

build:
	$(GO) build -o bin/ingot ./cmd/ingot

# Until `ingot serve` exists, run creates the bank database (once) and
# prints how to use the CLI on it.
run: build
	@mkdir -p $(dir $(DB))
	@test -f $(DB) || bin/ingot --db $(DB) init
	@bin/ingot --db $(DB) audit >/dev/null
	@echo
	@echo "The bank is ready: $(DB)"
	@echo "Use it from this shell with:"
	@echo "  export INGOT_DB=$(abspath $(DB)) PATH=$(abspath bin):\$$PATH"
	@echo "  ingot account create chem"
	@echo "  ingot deposit chem 1000 --end now+365d"
	@echo "  ingot balance"
	@echo "(README.md walks through the rest; ingot --help lists every command.)"

test:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

# Benchmarks print ingot's figures next to a raw bbolt baseline from the
# same run, and the server's over loopback next to the same work in process
# (see README, "Performance").
bench:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./...

# A short run of every fuzz target (make test runs their seed corpora).
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$target"; \
	    $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf bin
