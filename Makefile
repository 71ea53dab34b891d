# ingot: `make run` builds and starts a bank; `make test` runs every test;
# `make install`, `make package` and `make release` are for operators
# (docs/operations.md).
GO      ?= go
DB      ?= var/ingot.db
LISTEN  ?= 127.0.0.1:8080
BENCHTIME ?= 2s
FUZZTIME  ?= 30s
# Where build puts the binary, and install and package what they make.
BUILDDIR ?= bin

# Where install puts ingot: GNU's names, under PREFIX, staged under DESTDIR
# when a package is made of the tree. The packages use PREFIX=/usr, which is
# where Debian's and RHEL's own packages put binaries, man pages,
# completions and systemd's files (units in /usr/lib/systemd/system; with
# PREFIX=/usr/local, systemd reads them from /usr/local/lib/systemd/system).
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
LIBEXECDIR  ?= $(PREFIX)/libexec
DATADIR     ?= $(PREFIX)/share
MANDIR      ?= $(DATADIR)/man
UNITDIR     ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR  ?= $(DATADIR)/zsh/site-functions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d
# The service's settings are under /etc whatever the PREFIX, as a system
# service's are.
SYSCONFDIR  ?= /etc
# Where package writes the .deb and the .rpm, and release everything it
# makes.
PKGDIR ?= dist

# What `ingot version` prints and the packages and release files are named
# by: the semantic version contrib/packaging/version.sh makes of git's
# release tags (0.9.0 on the tag v0.9.0, 0.9.1-dev.3+g1a2b3c4 three commits
# after it; docs/operations.md, Releases), and the commit (Go's own record
# of it is off where GOFLAGS has -buildvcs=false). Each is worked out once,
# so that a commit made during a build does not change it half-way.
VERSION ?= $(shell contrib/packaging/version.sh 2>/dev/null || echo 0.0.0-dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
VERSION := $(VERSION)
COMMIT  := $(COMMIT)
LDFLAGS = -X main.version=$(VERSION) -X main.commit=$(COMMIT) $(EXTRA_LDFLAGS)
# package and release build ingot stripped (-s -w: no symbol table and no
# DWARF; a panic's trace still names functions and lines), without this
# host's paths (-trimpath), and, for the packages, as a PIE with read-only
# relocations (lintian's hardening checks).
STRIP_GOFLAGS  = -trimpath
STRIP_LDFLAGS  = -s -w
# The packages' maintainer: the name and address of the repository's
# commits, until the project has one of its own.
MAINTAINER ?= Seed 7f34db34 maintainers <maintainers@users.noreply.a-seed-7f34db34.example>

# /usr/sbin: Debian's munged and Slurm daemons, which tests start.
export PATH := $(PATH):/usr/local/go/bin:/usr/sbin

.PHONY: build run test axe e2e-slurm bench bench-history fuzz clean install package

build:
	$(GO) build $(GOBUILDFLAGS) -ldflags "$(LDFLAGS)" -o $(BUILDDIR)/ingot ./cmd/ingot

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
	@echo "  ingot web-login   # a link that signs a browser in to the web page"
	@echo "(README.md walks through the rest; ingot --help lists every command.)"
	@echo
	@bin/ingot --db $(DB) serve --listen $(LISTEN) --socket $(dir $(DB))ingot.sock \
	  --first-admin-key $(dir $(DB))admin.key $(if $(shell command -v unmunge),--munge) 2>>$(dir $(DB))serve.log

# axe-core checks the web page's accessibility inside Chromium
# (TestWebInBrowser). It is fetched here, with npm, at a pinned version
# whose file's SHA-256 is checked, rather than kept in the repository: the
# project takes in no code from elsewhere, and a test tool is no part of
# the product. The test looks for it here (or at $$INGOT_AXE); under
# INGOT_E2E=1 its absence fails the test.
AXE_VERSION = 4.14.1
AXE_SHA256 = 29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c
AXE = testdata/axe-core/axe.min.js

# Tests keep what they make to be looked at (the browser test's screenshots
# and axe-core's reports) under var/test-output/_artifacts/.
test: $(AXE)
	$(GO) vet ./...
	@mkdir -p var/test-output
	$(GO) test -count=1 -artifacts -outputdir $(abspath var/test-output) ./...

$(AXE):
	@mkdir -p $(dir $(AXE))
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	  (cd $$tmp && npm pack --silent axe-core@$(AXE_VERSION) >/dev/null && tar xzf axe-core-$(AXE_VERSION).tgz package/axe.min.js) && \
	  echo "$(AXE_SHA256)  $$tmp/package/axe.min.js" | sha256sum -c --quiet && \
	  cp $$tmp/package/axe.min.js $@

axe: $(AXE)

# e2e-slurm runs only the tests that start a real Slurm cluster (see
# docs/slurm-testing.md): internal/slurmtest's own, and every TestSlurm*
# test. They need root and Debian's slurm-wlm, slurmdbd, munge and
# mariadb-server (.ci/run installs them); here a missing one fails them
# rather than skipping them. make test runs them too, with a job array of
# 100 tasks where this runs one of 1,000 (TestSlurmJobArray: minutes).
e2e-slurm:
	INGOT_E2E=1 $(GO) test -count=1 ./internal/slurmtest/
	INGOT_E2E=1 INGOT_SLURM_ARRAY_TASKS=1000 $(GO) test -count=1 -timeout 30m -run '^TestSlurm' ./...

# bench-slurm measures what the bank's submit path costs Slurm's controller
# (contrib/slurm, TestBenchSlurmSubmit): on the real Slurm e2e-slurm starts,
# 4 parallel submitters, 500 `sbatch --hold` each way, with the bank's
# job_submit.lua and submit server and with no bank hook, in alternating
# rounds; it prints both rates, their ratio (bar 0.8), the p99 of one
# sbatch, and for comparison a process per job. Not run by make test.
.PHONY: bench-slurm
bench-slurm:
	INGOT_BENCH_SLURM=1 INGOT_E2E=1 $(GO) test -count=1 -v -run '^TestBenchSlurmSubmit$$' -timeout 30m ./contrib/slurm/

# Benchmarks print ingot's figures next to a raw bbolt baseline from the
# same run, and the server's over loopback next to the same work in process
# (see README, "Performance"). BenchmarkHistory runs here on a small bank;
# make bench-history runs it on the big ones.
bench:
	INGOT_HISTORY_CYCLES=5000 $(GO) test -run '^$$' -bench . -benchtime $(BENCHTIME) ./...

# What a long history costs: banks of INGOT_HISTORY_CYCLES lien + charge
# cycles (default 50000,500000: banks of 100,000 and 1,000,000 journal
# entries), made a month at a time; their file size, audits, queries and
# open (see BenchmarkHistory in lien). About seven minutes on two
# cores.
bench-history:
	$(GO) test -run '^$$' -bench '^BenchmarkHistory$$' -benchtime 1x -timeout 60m ./lien

# bench-shape measures what the shape of a bank costs its hot paths
# (issue 41; BenchmarkShape in lien): a lien + charge cycle, a deposit, a
# balance, a quote and a preemption answer on a bank whose account has 10
# allocations and on one where it has 10,000, 9,990 of them ended; each
# line's x_small is the cost at 10,000 over the cost at 10, in the same
# run (bar 1.3), x_small_cpu the same of this process's CPU time (which a
# busy machine moves less; PostgreSQL's own is not in it). On bbolt, and on PostgreSQL too with POSTGRES=1 (or
# INGOT_E2E=1): a server of its own, as e2e-postgres starts. About half a
# minute on two cores, two with PostgreSQL.
POSTGRES ?=
.PHONY: bench-shape
bench-shape:
	INGOT_BENCH_SHAPE_POSTGRES=$(POSTGRES) $(GO) test -run '^$$' -bench '^BenchmarkShape$$' -benchtime 2000x -timeout 20m ./lien

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

# soak runs a mixed workload from many clients (liens, charges, refunds,
# transfers, deposits, reads, web sign-ins) against ingot serve processes
# for DURATION (2m, 30m) while faults are injected: SIGKILLs, clock jumps,
# dropped and repeated retries, on bbolt a full disk and a failing fsync
# (root: a tmpfs and FUSE), on PostgreSQL (ENGINE=postgres: a primary and
# a synchronous standby of its own) failovers. After each fault it checks
# that every acknowledged change is in the journal once, no lien leaked and
# ingot audit --full passes, and it prints a table (docs/operations.md,
# "Soak before going live"). SOAKDIR=DIR puts the bbolt bank on DIR's disk
# and keeps it; RATE=N holds N changes a second rather than all the bank
# takes. make test runs a short one of each engine (TestSoak).
DURATION ?= 2m
ENGINE   ?= bbolt
SOAKDIR  ?=
RATE     ?=
.PHONY: soak
soak: build
	INGOT_E2E=1 INGOT_SOAK_DURATION=$(DURATION) INGOT_SOAK_ENGINE=$(ENGINE) INGOT_SOAK_BIN=$(abspath $(BUILDDIR))/ingot \
	  INGOT_SOAK_DIR=$(if $(SOAKDIR),$(abspath $(SOAKDIR))) INGOT_SOAK_RATE=$(RATE) \
	  $(GO) test -count=1 -timeout 0 -v -run '^TestSoak$$' ./internal/soak

# e2e-multisite runs three banks (a central bank and two sites) as ingot
# serve processes on loopback, linked as peers through a fault-injecting
# proxy (internal/faultproxy), for DURATION (2m, 30m) each time: once on
# bank files, once with a site on PostgreSQL. The central bank deposits at
# the sites (deposit --at), the sites' jobs charge the grants and each
# other's visitors' projects, and the sites report their usage every 5 s,
# while the links drop, reset, delay and black-hole and each bank is
# SIGKILLed and started again; once healed, every acknowledged deposit,
# charge and usage report must be applied exactly once, the credits
# conserved, nothing pending, and every bank's audit --full clean. It
# prints the operations, the faults, lost, doubled, the time to drain and
# the usage reports
# (docs/multi-site.md, "Tested under faults"). ENGINE=bbolt or
# ENGINE=postgres, given to make, runs one (soak's default of ENGINE is
# not taken). make test runs a short one of each (TestMultisite).
.PHONY: e2e-multisite
e2e-multisite: build
	INGOT_E2E=1 INGOT_MULTISITE_DURATION=$(DURATION) INGOT_MULTISITE_ENGINE=$(if $(filter command line environment,$(origin ENGINE)),$(ENGINE)) \
	  INGOT_MULTISITE_BIN=$(abspath $(BUILDDIR))/ingot \
	  $(GO) test -count=1 -timeout 0 -v -run '^TestMultisite$$' ./internal/multisite

# A short run of every fuzz target (make test runs their seed corpora).
# A failing input is written to the package's testdata/fuzz/TARGET/; a run
# that fails with Go's "context deadline exceeded" at the end of
# -fuzztime and writes none is Go's fuzzing coordinator racing its own
# deadline (golang/go#75804, fixed in Go 1.27), not the target: it is
# said and run once more.
fuzz:
	@mkdir -p $(BUILDDIR); for pkg in $$($(GO) list ./...); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    for try in 1 2; do \
	      echo "fuzz $$pkg $$target"; \
	      before=$$(ls $$dir/testdata/fuzz/$$target 2>/dev/null | wc -l); \
	      $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s $$pkg >$(BUILDDIR)/fuzz.out 2>&1 \
	        && { tail -n 3 $(BUILDDIR)/fuzz.out; break; }; \
	      cat $(BUILDDIR)/fuzz.out; \
	      after=$$(ls $$dir/testdata/fuzz/$$target 2>/dev/null | wc -l); \
	      if [ $$try = 1 ] && [ $$before = $$after ] && grep -q 'context deadline exceeded' $(BUILDDIR)/fuzz.out; then \
	        echo "fuzz $$target: Go's deadline race (golang/go#75804), no failing input: once more"; continue; \
	      fi; \
	      exit 1; \
	    done; \
	  done; \
	done

# The units, the backup script and the config name ingot's files where
# the packages put them; installed elsewhere, they name them there.
SUBST_PATHS = sed -e 's|/usr/bin/ingot|$(BINDIR)/ingot|g' -e 's|/usr/libexec/ingot/|$(LIBEXECDIR)/ingot/|g' \
  -e 's|/etc/ingot/|$(SYSCONFDIR)/ingot/|g'

# install puts the binary, its man page and completions, the systemd units
# (the service, the daily backup and digests), the sysusers.d and tmpfiles.d files
# that make the user ingot and /var/lib/ingot, and the example config as
# /etc/ingot/ingot.toml, unless there is one already: an operator's
# settings are never overwritten. It makes no user and starts nothing
# (docs/operations.md, "Install").
install: build
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR)/ingot $(DESTDIR)$(MANDIR)/man1 \
	  $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(SYSCONFDIR)/ingot \
	  $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR) $(BUILDDIR)/install
	install -m 0755 $(BUILDDIR)/ingot $(DESTDIR)$(BINDIR)/ingot
	$(BUILDDIR)/ingot man >$(BUILDDIR)/install/ingot.1
	$(BUILDDIR)/ingot completion bash >$(BUILDDIR)/install/ingot.bash
	$(BUILDDIR)/ingot completion zsh >$(BUILDDIR)/install/_ingot
	$(BUILDDIR)/ingot completion fish >$(BUILDDIR)/install/ingot.fish
	install -m 0644 $(BUILDDIR)/install/ingot.1 $(DESTDIR)$(MANDIR)/man1/ingot.1
	install -m 0644 $(BUILDDIR)/install/ingot.bash $(DESTDIR)$(BASHCOMPDIR)/ingot
	install -m 0644 $(BUILDDIR)/install/_ingot $(DESTDIR)$(ZSHCOMPDIR)/_ingot
	install -m 0644 $(BUILDDIR)/install/ingot.fish $(DESTDIR)$(FISHCOMPDIR)/ingot.fish
	for f in ingot.service ingot-backup.service ingot-backup.timer ingot-notify.service ingot-notify.timer ingot-backup; do \
	  $(SUBST_PATHS) contrib/systemd/$$f >$(BUILDDIR)/install/$$f || exit 1; \
	done
	install -m 0644 $(addprefix $(BUILDDIR)/install/,ingot.service ingot-backup.service ingot-backup.timer ingot-notify.service ingot-notify.timer) $(DESTDIR)$(UNITDIR)
	install -m 0755 $(BUILDDIR)/install/ingot-backup $(DESTDIR)$(LIBEXECDIR)/ingot/ingot-backup
	install -m 0644 contrib/systemd/ingot.sysusers $(DESTDIR)$(SYSUSERSDIR)/ingot.conf
	install -m 0644 contrib/systemd/ingot.tmpfiles $(DESTDIR)$(TMPFILESDIR)/ingot.conf
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/ingot/ingot.toml ]; then \
	  echo "kept $(DESTDIR)$(SYSCONFDIR)/ingot/ingot.toml; the example of this version is contrib/ingot.toml"; \
	else \
	  $(SUBST_PATHS) contrib/ingot.toml >$(BUILDDIR)/install/ingot.toml && \
	  install -m 0644 $(BUILDDIR)/install/ingot.toml $(DESTDIR)$(SYSCONFDIR)/ingot/ingot.toml; \
	fi

# package makes the .deb and the .rpm in PKGDIR from the files of install
# (PREFIX=/usr), with nfpm (contrib/packaging/nfpm.yaml). nfpm is a tool of
# a module of its own, contrib/packaging/go.mod, so that its dependencies
# stay out of ingot's; go builds it once and keeps it in its cache. The
# binary is built with cgo, which makes it look users up through NSS,
# stripped. /usr/share/doc/ingot has README.md, docs/, and the copyright
# file and changelog that contrib/packaging/pkgdoc writes (ingot's licence
# and those of the Go modules compiled in; the release tags' commits); the
# .rpm has its copyright file in /usr/share/licenses/ingot.
package: PKGROOT = $(abspath $(BUILDDIR))/pkgroot
package:
	rm -rf $(PKGROOT)
	CGO_ENABLED=1 $(MAKE) --no-print-directory install DESTDIR=$(PKGROOT) PREFIX=/usr SYSCONFDIR=/etc \
	  VERSION=$(VERSION) COMMIT=$(COMMIT) GOBUILDFLAGS="$(STRIP_GOFLAGS) -buildmode=pie" EXTRA_LDFLAGS="$(STRIP_LDFLAGS)"
	gzip -9n $(PKGROOT)/usr/share/man/man1/ingot.1
	install -d $(PKGROOT)/usr/share/doc/ingot/docs
	gzip -9nc README.md >$(PKGROOT)/usr/share/doc/ingot/README.md.gz
	for doc in docs/*.md; do gzip -9nc $$doc >$(PKGROOT)/usr/share/doc/ingot/$$doc.gz || exit 1; done
	$(GO) -C contrib/packaging run ./pkgdoc -repo $(abspath .) -binary $(PKGROOT)/usr/bin/ingot -version $(VERSION) \
	  -maintainer "$(MAINTAINER)" -copyright $(PKGROOT)/usr/share/doc/ingot/copyright \
	  -copyright-full $(PKGROOT)/usr/share/licenses/ingot/copyright -changelog $(PKGROOT)/usr/share/doc/ingot/changelog.Debian.gz
	mkdir -p $(PKGDIR)
	for packager in deb rpm; do \
	  PKGROOT=$(PKGROOT) PKG_VERSION=$(VERSION) PKG_ARCH=$$($(GO) env GOARCH) PKG_MAINTAINER="$(MAINTAINER)" \
	    $(GO) -C contrib/packaging tool nfpm package --config nfpm.yaml --packager $$packager --target $(abspath $(PKGDIR)) || exit 1; \
	done

# release makes, in PKGDIR, what a release publishes (docs/operations.md,
# Releases: git tag v0.9.0 && make release): ingot for each of
# RELEASE_ARCHES, built static (cgo off: it runs on any Linux and in the
# image, and reads users from /etc/passwd only) and stripped; the .deb and
# the .rpm of make package, for this host's architecture, with cgo; the
# container image of each architecture (make image), tagged
# ingot:VERSION-ARCH, as an archive that podman load and docker load read;
# and SHA256SUMS of them. They are made in BUILDDIR/release first, so that
# SHA256SUMS names this release's files only.
RELEASE_ARCHES ?= amd64 arm64

# image builds the container image of contrib/container/Containerfile (no
# base image: nothing is pulled) with CONTAINER_TOOL, podman or docker, for
# IMAGE_ARCH, from IMAGE_BINARY (by default ingot built static for it
# here), tags it IMAGE_TAG and saves it as IMAGE_ARCHIVE. podman writes
# the image in Docker's format, which keeps the HEALTHCHECK (OCI's has none).
CONTAINER_TOOL ?= podman
IMAGE_ARCH     ?= $(shell $(GO) env GOARCH)
IMAGE_TAG      ?= ingot:$(subst +,_,$(VERSION))
IMAGE_BINARY   ?=
IMAGE_ARCHIVE  ?= $(PKGDIR)/ingot-$(VERSION)-image-linux-$(IMAGE_ARCH).tar

.PHONY: release image
release: RELDIR = $(abspath $(BUILDDIR))/release
release:
	rm -rf $(RELDIR)
	$(MAKE) --no-print-directory package PKGDIR=$(RELDIR) VERSION=$(VERSION) COMMIT=$(COMMIT)
	for arch in $(RELEASE_ARCHES); do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build $(STRIP_GOFLAGS) -ldflags "$(LDFLAGS) $(STRIP_LDFLAGS)" \
	    -o $(RELDIR)/ingot-$(VERSION)-linux-$$arch ./cmd/ingot || exit 1; \
	  $(MAKE) --no-print-directory image VERSION=$(VERSION) COMMIT=$(COMMIT) IMAGE_ARCH=$$arch \
	    IMAGE_BINARY=$(RELDIR)/ingot-$(VERSION)-linux-$$arch IMAGE_TAG=ingot:$(subst +,_,$(VERSION))-$$arch \
	    IMAGE_ARCHIVE=$(RELDIR)/ingot-$(VERSION)-image-linux-$$arch.tar || exit 1; \
	done
	cd $(RELDIR) && sha256sum -- * >SHA256SUMS
	mkdir -p $(PKGDIR)
	cp $(RELDIR)/* $(PKGDIR)/
	@echo "ingot $(VERSION) in $(PKGDIR):" && cat $(RELDIR)/SHA256SUMS

image: IMAGEDIR = $(abspath $(BUILDDIR))/image-$(IMAGE_ARCH)
image:
	rm -rf $(IMAGEDIR)
	install -d -m 0755 $(IMAGEDIR)/rootfs/etc $(IMAGEDIR)/rootfs/usr/bin $(IMAGEDIR)/rootfs/var/lib $(IMAGEDIR)/rootfs/run \
	  $(IMAGEDIR)/run/ingot $(dir $(IMAGE_ARCHIVE))
	install -d -m 1777 $(IMAGEDIR)/rootfs/tmp
	install -d -m 0750 $(IMAGEDIR)/lib/ingot
	$(if $(IMAGE_BINARY),install -m 0755 $(IMAGE_BINARY) $(IMAGEDIR)/rootfs/usr/bin/ingot,CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) \
	  $(GO) build $(STRIP_GOFLAGS) -ldflags "$(LDFLAGS) $(STRIP_LDFLAGS)" -o $(IMAGEDIR)/rootfs/usr/bin/ingot ./cmd/ingot)
	install -m 0644 contrib/container/passwd contrib/container/group $(IMAGEDIR)/rootfs/etc/
	install -m 0644 contrib/container/Containerfile $(IMAGEDIR)/
	rm -f $(IMAGE_ARCHIVE)
	BUILDAH_FORMAT=docker $(CONTAINER_TOOL) build --platform linux/$(IMAGE_ARCH) --build-arg VERSION=$(VERSION) \
	  --build-arg COMMIT=$(COMMIT) -f $(IMAGEDIR)/Containerfile -t $(IMAGE_TAG) $(IMAGEDIR)
	$(CONTAINER_TOOL) save -o $(IMAGE_ARCHIVE) $(IMAGE_TAG)

clean:
	rm -rf bin dist
