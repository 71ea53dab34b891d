# ingot: `make run` builds and starts a bank; `make test` runs every test.
GO      ?= go
DB      ?= var/ingot.db
LISTEN  ?= 127.0.0.1:8080
BENCHTIME ?= 2s
FUZZTIME  ?= 20s

# What `ingot version` prints: git's description of the commit, and the
# commit (Go's own record of it is off where GOFLAGS has -buildvcs=false).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

export PATH := $(PATH):/usr/local/go/bin

.PHONY: build run test bench bench-history fuzz clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ingot ./cmd/ingot

# run builds ingot, creates the bank (once) and serves it in the
# foreground until Ctrl-C: HTTP on $(LISTEN), the local socket var/ingot.sock
# (root and you are admin there, other users are themselves), logs in
# var/serve.log; MUNGE credentials too where unmunge is installed. On the
# first start it makes the admin client and prints its key, which is also
# in var/admin.key.
run: build
	@mkdir -p $(dir $(DB))
	@test -f $(DB) || bin/ingot --db $(DB) init
	@echo
	@echo "The bank is $(DB); the server's log goes to $(dir $(DB))serve.log. Stop it with Ctrl-C."
	@echo "In a second shell, use it as the admin with:"
	@echo "  export INGOT_SERVER=http://$(LISTEN) INGOT_KEY_FILE=$(abspath $(dir $(DB))admin.key) PATH=$(abspath bin):\$$PATH"
	@echo "  ingot account create chem"
	@echo "  ingot deposit chem 1000 --end now+365d"
	@echo "  ingot balance"
	@echo "(README.md walks through the rest; ingot --help lists every command.)"
	@echo
	@bin/ingot --db $(DB) serve --listen $(LISTEN) --socket $(dir $(DB))ingot.sock \
	  --first-admin-key $(dir $(DB))admin.key $(if $(shell command -v unmunge),--munge) 2>>$(dir $(DB))serve.log

test:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

# Benchmarks print ingot's figures next to a raw bbolt baseline from the
# same run, and the server's over loopback next to the same work in process
# (see README, "Performance").
bench:
	$(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./...

# What a long history costs: banks of INGOT_HISTORY_CYCLES lien + charge
# cycles (default 10000,40000), their file size, audits, queries and open
# (see BenchmarkHistory in lien).
bench-history:
	$(GO) test -run '^$$' -bench '^BenchmarkHistory$$' -benchtime 1x -timeout 60m ./lien

# e2e-postgres runs the tests that start PostgreSQL servers of their own
# (internal/pgtest, docs/postgres.md): the engine's, package lien's suite on
# it, the command line's, and the failover of a primary with a synchronous
# standby under two servers (TestPostgresFailover). They need Debian's
# postgresql (.ci/run installs it); here a missing one fails them rather
# than skipping them. make test runs them too.
.PHONY: e2e-postgres
e2e-postgres:
	INGOT_E2E=1 $(GO) test -count=1 ./internal/pgtest/ ./ledger/pgstore/...
	INGOT_E2E=1 $(GO) test -count=1 -run 'Postgres|TwoServers' ./lien ./cmd/ingot

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
