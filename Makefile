# NebulaCtrl — the targets a newcomer can guess.
GO      ?= go
PKGS    ?= ./...
BENCH   ?= .
COUNT   ?= 6

.PHONY: run dev test generate lint lint-schema bench bench-compile bench-nested bench-agent bench-console load build check-generate check-gqlgen web check-web image

## run: start the control plane on the embedded store (data in ./nebula-data)
run: build
	./bin/nebula serve

## dev: the control plane with a simulated cluster and a demo project (no Kubernetes needed)
dev: build
	./bin/nebula dev

# The image's version (its tag, and the agent version its install bundles
# pin) and architecture; IMAGE_OUT is where it is written.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
ARCH      ?= amd64
IMAGE_OUT ?= dist/image
IMAGE_REPOSITORY ?= ghcr.io/nebulactrl/nebula
PUBLIC_URL ?= https://nebula.example.com

## image: a reproducible OCI image of the static nebula binary, no container daemon: an OCI layout and a tarball in
## IMAGE_OUT, its digest printed, and the control plane's Kubernetes manifests pinned to it (docs/deploy.md)
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(ARCH) $(GO) build -trimpath -buildvcs=false \
		-ldflags "-s -w -buildid= -X github.com/nebulactrl/nebula/internal/cli.Version=$(VERSION)" -o bin/linux-$(ARCH)/nebula ./cmd/nebula
	$(GO) run ./hack/image -binary bin/linux-$(ARCH)/nebula -arch $(ARCH) -version $(VERSION) -repository $(IMAGE_REPOSITORY) -public-url $(PUBLIC_URL) -out $(IMAGE_OUT)

## build: build the nebula binary into bin/ (the first time, it says what the wait is)
build:
	@test -n "$$($(GO) list -m -f '{{.Dir}}' github.com/99designs/gqlgen 2>/dev/null)" || \
		echo "== first build: downloading the Go modules (the 'go: downloading' lines) and compiling them; several minutes once, seconds afterwards"
	@echo "== building bin/nebula"
	$(GO) build -o bin/nebula ./cmd/nebula

# The packages whose state is shared across goroutines, and the API tests
# that drive connections, subscriptions and replicas concurrently: run again
# under the race detector.
RACE_PKGS ?= ./authz ./internal/bus ./internal/drain ./internal/hub ./internal/server ./internal/control/... ./agent ./internal/protocol
RACE_API  ?= TestStream|TestDeferOverHTTP|TestHeartbeat|TestWS|TestLiveGrants|TestSubscription|TestConnectionLimits|TestGracefulShutdown|TestIdempotencyConcurrent|TestReplicas|TestUnavailable|TestWebhookTwoReplicas|TestClientFollows

## test: the whole test suite (PostgreSQL tests start their own server), then the concurrent parts under -race
test:
	$(GO) test -count=1 -timeout 20m $(PKGS)
	$(GO) test -race -count=1 -timeout 20m $(RACE_PKGS)
	$(GO) test -race -count=1 -timeout 20m -run '$(RACE_API)' ./internal/apitest
	cd third_party/gqlgen && $(GO) test -count=1 ./graphql/...

## web: build the embedded web pages (console, GraphiQL, sign-in) from web/ into web/dist, which is committed (needs
## Node 20 and npm): the console's typed GraphQL documents are generated from schema.graphqls and type-checked first
web:
	cd web && npm ci --no-audit --no-fund --loglevel=error && npx graphql-codegen --config codegen.yml --silent && \
		npx tsc -p tsconfig.json && npx vite build --logLevel warn
	@test -f web/dist/graphiql.html

## check-web: fail when the committed web/dist or the console's generated documents are not what web/'s sources and
## schema.graphqls make (CI); a schema change that breaks the console fails make web itself
check-web: web
	@git diff --exit-code --stat -- web/dist web/src/console/gql && test -z "$$(git status --porcelain -- web/dist web/src/console/gql)" || \
		{ echo "web/dist or web/src/console/gql is not the build of web/: run make web and commit them"; exit 1; }

## generate: regenerate the gqlgen code in graph/ and the CLI's typed client (internal/client, genqlient) from schema.graphqls
generate:
	cd internal/gid && $(GO) generate .
	$(GO) tool gqlgen generate
	cd internal/client && $(GO) tool genqlient genqlient.yaml
	gofmt -w graph resolvers internal/client

## check-generate: fail when `make generate` changes anything (CI)
check-generate: generate
	@out="$$(git status --porcelain -- graph resolvers internal/client internal/gid gqlgen.yml schema.graphqls go.mod go.sum)"; \
	if [ -n "$$out" ]; then echo "make generate changed:"; echo "$$out"; exit 1; fi

## check-gqlgen: fail unless third_party/gqlgen is the gqlgen release go.mod names plus nebula/gqlgen.patch, show
## that a one-line change to it would be caught, and that hack/gqlgen-vendor.sh rebuilds it from scratch exactly
## (CI; downloads the release from the module proxy)
check-gqlgen:
	bash hack/check-gqlgen.sh
	bash hack/check-gqlgen.sh --self-test
	bash hack/gqlgen-vendor.sh --prove

## lint: formatting and vet
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1)
	$(GO) vet $(PKGS)

## lint-schema: lint schema.graphqls and fail on a breaking change since hack/schema/released.graphqls that
## docs/schema-changes.md does not announce, then show that this check catches one (CI; needs Node 20 and npm)
lint-schema:
	cd hack/schema && npm ci --no-audit --no-fund --loglevel=error
	bash hack/schema/check.sh && bash hack/schema/check.sh --self-test

## bench: the benchmarks of docs/benchmarks.md (COUNT runs each, for benchstat)
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count $(COUNT) -timeout 60m ./internal/bench/

# The agent at scale (issue 10): environments x services, e.g. 5x10 for a
# quick run (2-3 minutes); 50x20 is the issue's size (about half an hour with
# the agent before its rework). Extra agent flags come from
# NEBULA_SCALE_AGENT_ARGS, e.g. NEBULA_SCALE_AGENT_ARGS='--kube-qps 200'.
SCALE ?= 50x20

## bench-agent: the agent against the simulated cluster at SCALE=EnvxSvc, phase by phase (docs/benchmarks.md)
bench-agent:
	NEBULA_AGENT_SCALE=$(SCALE) NEBULA_REQUIRE_SIMCLUSTER=1 \
		$(GO) test -count=1 -v -timeout 300m -run '^TestAgentScale$$' ./e2e

## bench-compile: BenchmarkCompile against BASE=<commit>, interleaved, COUNT runs (docs/benchmarks.md)
bench-compile:
	BASE=$(BASE) COUNT=$(COUNT) bash hack/bench/compile.sh

## bench-nested: BenchmarkNestedRatio against BASE=<commit>, interleaved, COUNT runs (docs/benchmarks.md)
bench-nested:
	BASE=$(BASE) COUNT=$(COUNT) bash hack/bench/nested.sh

## bench-console: time to first render of the console's deployment page on nebula dev, RUNS times (docs/benchmarks.md)
bench-console: build
	RUNS=$(COUNT) bash hack/bench/console-first-render.sh

# The whole-system load run (issue 16): DURATION measured after a 30 s
# warm-up, the 200 clusters shared by TENANTS tenants (one tenant's
# mutations run one at a time: docs/benchmarks.md). Extra flags of
# TestSystemLoad come from LOAD_ARGS, e.g. LOAD_ARGS='-load.out=/tmp/load.md'.
DURATION ?= 5m
TENANTS  ?= 10

## load: the whole-system load run of docs/benchmarks.md on loopback: two nebula serve processes on one PostgreSQL, 200 agents,
## 500 subscribers, 50 mutations/s and 200 queries/s for DURATION (5m); prints latencies per operation, CPU and memory per process
load: build
	$(GO) test -count=1 -v -timeout 60m -run '^TestSystemLoad$$' ./internal/loadrun/ \
		-args -load.duration=$(DURATION) -load.tenants=$(TENANTS) -load.bin=$(CURDIR)/bin/nebula $(LOAD_ARGS)
