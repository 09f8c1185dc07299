# mfs-election: see README.md.
GO     ?= go
SEEDS  ?= 20000

.PHONY: all build test chaos vet

all: build

build:
	$(GO) build ./...

vet:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi

# Unit, golden and property tests plus 500 simulator seeds (bounded: about
# half a minute on 2 cores).
test: vet
	$(GO) test -count=1 -timeout 14m ./...

# Many more simulator seeds on every core; rewrites the figures in docs/sim.md.
# SEEDS=N overrides the number of seeds.
chaos:
	$(GO) run ./internal/sim/chaos -seeds=$(SEEDS) -doc docs/sim.md
