# mfs-election: see README.md.
GO     ?= go
SEEDS  ?= 20000
DSEEDS ?= 40
TRIALS ?= 20
# How long `make fuzz` runs each fuzz target, and `make test` (SHORTFUZZ).
FUZZTIME  ?= 60s
SHORTFUZZ ?= 4s

# The voters and locations of `make scale`, and a directory for its CPU
# profiles (PROFILE=dir: the LEADER at rest, the masters and the swarm over
# a failover, each with its pprof top 15; empty: none).
N         ?= 1000
LOCATIONS ?= 3
PROFILE   ?=

.PHONY: all build run test chaos chaos-drivers bench scale race vet fuzz mutate install versitygw

# An S3-compatible server (versitygw, pinned: v1.8.0 is the first release
# whose conditional PUTs are atomic per key) for the witness store's tests.
# Kept out of go.mod: it drags some 80 modules. Git-ignored under .bin/.
VERSITYGW := $(CURDIR)/.bin/versitygw

all: build

# The three binaries, into bin/.
build:
	$(GO) build -o bin/ ./cmd/mfsmaster ./cmd/mfschunkserver ./cmd/mfscli

# Installing like any daemon (DESTDIR for a staging root, PREFIX for where
# it lives): the binaries; the example configs in SYSCONFDIR/mfs, each as
# NAME.sample and as NAME only where NAME is not there yet (an operator's
# config is never overwritten), likewise SYSCONFDIR/default/*; systemd units
# and the mfs user (sysusers.d); bash and zsh completions of mfscli; the
# docs. docs/operations.md, "A first cluster on three hosts", uses them.
PREFIX     ?= /usr/local
SYSCONFDIR ?= /etc
DESTDIR    ?=
BINDIR      = $(PREFIX)/bin
SBINDIR     = $(PREFIX)/sbin
DOCDIR      = $(PREFIX)/share/doc/mfs-election
MANDIR      = $(PREFIX)/share/man
UNITDIR    ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/site-functions

install: build
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(SYSCONFDIR)/mfs $(DESTDIR)$(SYSCONFDIR)/default \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(DOCDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8
	install -m 0755 bin/mfsmaster bin/mfschunkserver $(DESTDIR)$(SBINDIR)/
	install -m 0755 bin/mfscli $(DESTDIR)$(BINDIR)/
	for f in mfsmaster.cfg mfschunkserver.cfg mfshdd.cfg; do \
		install -m 0644 etc/$$f $(DESTDIR)$(SYSCONFDIR)/mfs/$$f.sample || exit 1; \
		[ -e $(DESTDIR)$(SYSCONFDIR)/mfs/$$f ] || install -m 0640 etc/$$f $(DESTDIR)$(SYSCONFDIR)/mfs/$$f || exit 1; \
	done
	for f in mfsmaster mfschunkserver; do \
		[ -e $(DESTDIR)$(SYSCONFDIR)/default/$$f ] || install -m 0644 etc/default/$$f $(DESTDIR)$(SYSCONFDIR)/default/$$f || exit 1; \
		sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' \
			etc/systemd/$$f.service.in > $(DESTDIR)$(UNITDIR)/$$f.service || exit 1; \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$$f.service; \
	done
	install -m 0644 etc/systemd/mfs.sysusers.conf $(DESTDIR)$(SYSUSERSDIR)/mfs.conf
	bin/mfscli --completion bash > $(DESTDIR)$(BASHCOMPDIR)/mfscli
	bin/mfscli --completion zsh > $(DESTDIR)$(ZSHCOMPDIR)/_mfscli
	install -m 0644 README.md LICENSE docs/*.md $(DESTDIR)$(DOCDIR)/
	# The man pages come from the binaries' own flags and key tables.
	bin/mfscli --man > $(DESTDIR)$(MANDIR)/man1/mfscli.1
	for f in mfsmaster mfschunkserver; do \
		bin/$$f --man > $(DESTDIR)$(MANDIR)/man8/$$f.8 && bin/$$f --man-cfg > $(DESTDIR)$(MANDIR)/man5/$$f.cfg.5 || exit 1; \
	done

# A real local cluster in the foreground on loopback: 3 masters on
# 127.0.0.11-13, 6 chunkservers in 3 locations; Ctrl-C stops it.
# WITNESS=1: two sites (a master and two chunkservers each, 127.0.1.x and
# 127.0.2.x) and an object-store witness, versitygw on 127.0.0.1 (installed
# first by the versitygw target), named with mfscli -CWITNESS on.
run: build $(if $(WITNESS),versitygw)
	$(GO) build -o bin/ ./internal/cluster/localrun
	bin/localrun -dir run -bin bin $(if $(WITNESS),-witness)

# go vet, staticcheck (its default checks; fetched through the module proxy
# at a fixed version, so CI needs nothing installed), and gofmt. A finding
# that is wrong by design is silenced where it is, with
# //lint:ignore CHECK reason, never for the whole tree.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

# The nested test module xtest/ (the browser and Prometheus tests, whose
# dependencies stay out of go.mod) is vetted and checked the same way; the
# gofmt step covers it through git ls-files.
vet:
	$(GO) vet ./...
	$(STATICCHECK) ./...
	cd xtest && $(GO) vet ./...
	cd xtest && $(STATICCHECK) ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi

# Unit, golden and property tests, 500 simulator seeds, and the real-process
# tests (daemons over TCP on loopback, kill -9, SIGSTOP, a partition in a
# network namespace when run as root); then the nested test module xtest/
# (the web page in headless Chromium, installed from Debian's packages
# first when it is missing; the shipped alert rules and dashboard through
# Prometheus's parsers); then the race detector over the pure core, the
# drivers and the simulator's seed runner. Bounded: about a quarter of an
# hour on 2 cores. Then every fuzz target for SHORTFUZZ (plain go test only
# replays their corpora).
test: vet versitygw
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
		{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		{ DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q chromium >/dev/null 2>&1 || \
		{ timeout 300 apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q chromium >/dev/null 2>&1; }; }; } || \
		echo "make test: Chromium is not installed and could not be (apt-get install chromium, as root): TestWebPage will skip"
	@command -v iptables >/dev/null 2>&1 || \
		{ [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		{ DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -q iptables >/dev/null 2>&1 || \
		{ timeout 300 apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -q iptables >/dev/null 2>&1; }; }; } || \
		echo "make test: iptables is not installed and could not be (apt-get install iptables, as root): TestLossyLeader will skip"
	MFS_VERSITYGW=$(VERSITYGW) $(GO) test -count=1 -timeout 14m ./...
	cd xtest && $(GO) test -count=1 -timeout 10m ./...
# The race detector over ./pkg/..., ./internal/node/... and the
# simulator, bounded to about 5 minutes on 2 cores (its own build, and code
# several times slower): -short (pkg/witness plays 20 lease seeds, not
# 100); internal/node and its drivers (masternode, csnode) in a go test
# of their own, one package at a time (-p 1), as the master's rate-window
# and slow-reader tests miss their real-time bounds when they share the
# cores with pkg/witness, or with the chunkserver's tests, under -race;
# of the simulator only TestSeeds, the one test that runs worlds at once
# (one per core), on 10 seeds: each seed is single-threaded, so more seeds
# find more bugs but hardly more races, and -short's 50 take 5 minutes
# under -race. The drivers' simulation on memnet, one seed (-short): the
# real drivers' goroutines under the detector.
	$(GO) test -race -short -count=1 -timeout 10m ./pkg/...
	MFS_VERSITYGW=$(VERSITYGW) $(GO) test -race -short -count=1 -p 1 -timeout 10m ./internal/node/...
	$(GO) test -race -short -count=1 -timeout 5m -run '^TestSeeds$$' ./internal/sim -seeds=10
	$(GO) test -race -short -count=1 -timeout 5m ./internal/transport/... ./internal/sim/drivers/...
	$(call fuzz-each,$(SHORTFUZZ))

# Every fuzz target (each func Fuzz* in a _test.go file), one after another
# (go test fuzzes one target per run), FUZZTIME each. A failure stops here;
# go test saves the input under the package's testdata/fuzz/<target>/, where
# it then stays a regression case that plain `go test` replays.
fuzz:
	$(call fuzz-each,$(FUZZTIME))

# fuzz-each runs every fuzz target for $(1). Go 1.26's fuzzing coordinator
# can end a run at the -fuzztime deadline with a bare "context deadline
# exceeded" failure and nothing found (golang/go#75804, fixed in Go 1.27);
# that alone is reported and passed over. Anything else fails: a failing
# input (written to testdata/fuzz/<target>/), a panic, a failing seed.
define fuzz-each
	@log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	for f in $$(grep -rl --include='*_test.go' '^func Fuzz' cmd internal pkg | sort); do \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "fuzz $$t (./$$(dirname $$f)) for $(1)"; \
			if $(GO) test -run='^$$' -fuzz="^$$t\$$" -fuzztime=$(1) ./$$(dirname $$f) >$$log 2>&1; then \
				grep -E '^(fuzz: elapsed: .*execs|ok )' $$log | tail -n 2; \
			elif grep -q '^    context deadline exceeded$$' $$log && \
				! grep -q -e 'Failing input written' -e '^panic' -e '--- FAIL: [^ ]*/' $$log; then \
				grep '^fuzz: elapsed: .*execs' $$log | tail -n 1; \
				echo "  ended by the -fuzztime deadline race (golang/go#75804), nothing found: not a failure"; \
			else \
				cat $$log; exit 1; \
			fi; \
		done; \
	done
endef

# Installs versitygw into .bin/ when it is not there (about 4 minutes on 2
# cores the first time; the build cache makes later installs quick).
versitygw:
	test -x $(VERSITYGW) || GOBIN=$(CURDIR)/.bin $(GO) install github.com/versity/versitygw/cmd/versitygw@v1.8.0

# Many more simulator seeds on every core; rewrites the figures in docs/sim.md.
# SEEDS=N overrides the number of seeds; WITNESS=1 runs every seed on two
# locations with an object-store witness (its own block of figures).
# Then DSEEDS seeds of the drivers' simulation (the real drivers of
# internal/node on an in-memory network, one seed at a time, about 20 s
# each): its own block of figures.
chaos: chaos-drivers
	$(GO) run ./internal/sim/chaos -seeds=$(SEEDS) -doc docs/sim.md $(if $(WITNESS),-witness)

chaos-drivers:
	$(GO) run ./internal/sim/drivers/chaos -seeds=$(DSEEDS) -doc docs/sim.md

# Failover of real processes (kill -9 with and without the fast path,
# SIGSTOP, 200 ms stalls), changes and reads against a 3-member etcd in the
# same run, two locations (a whole site lost, with the object-store witness
# on versitygw, installed first, and with a voter in a third location; as
# root, splits in a network namespace), cold starts, and the scale table
# (100 to 10,000 voters in 3 and 8 locations: see scale); rewrites
# docs/benchmarks.md. About 20 minutes at TRIALS=20 before the scale
# table, which adds up to an hour or so; installs etcd from Debian's
# packages when it is missing.
#
# BENCH=KIND runs one part alone and prints it, writing nothing (scale,
# sites and coldstart rewrite their own section): BENCH=changes is ours and etcd's
# change throughput at every client count and the first change after a
# kill -9, about a minute; the kinds are listed by `go run
# ./internal/cluster/bench -h` (-only).
BENCH ?=
bench: versitygw
	$(GO) run ./internal/cluster/bench -trials=$(TRIALS) -doc docs/benchmarks.md -only='$(BENCH)'

# The real-process linearizability test (porcupine over kill -9, SIGSTOP,
# step-down and handover, under client load) with every daemon built
# under the race detector: a race report in any daemon's log fails it.
race:
	MFS_RACE=1 $(GO) test -count=1 -timeout 10m ./internal/cluster -run 'TestLinearizableAcrossFailovers' -v

# One point of the scale benchmark (issue 13): 3 real masters and one
# mfsswarm process of N real chunkserver drivers in LOCATIONS locations;
# cold elections, kill -9 and SIGSTOP failover, 200 ms stalls, CPU, RSS,
# bytes on the wire, heartbeat rounds and a reconnect storm. Prints the
# point's rows and writes nothing (make bench writes the whole table into
# docs/benchmarks.md). Raises RLIMIT_NOFILE: run it as root for N in the
# thousands.
scale:
	$(GO) run ./internal/cluster/bench -only scale -doc '' -scale-n=$(N) -scale-locations=$(LOCATIONS) -scale-idle=0 -scale-register=0 -scale-profile='$(PROFILE)'

# Mutation test of the pure core's guard clauses: each if that returns and
# each case of a tagless switch in the pure core (pkg/roles, registry, changelog,
# namespace, quorum, locations)
# replaced by false in turn, ./pkg/... tested against it through -overlay
# (the tree is never written). About 10 s a mutant, an hour in all, one at a
# time; MUTATEFLAGS passes flags, e.g. MUTATEFLAGS='-j 2 -out report.md' or
# '-list' or '-only voter.go:340'.
mutate:
	$(GO) run ./internal/mutate -go=$(GO) $(MUTATEFLAGS)
