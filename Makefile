# ctprof — `make demo` runs the main job, `make test` runs every test.
# Both install what a fresh machine lacks (see scripts/deps.sh).

GO        ?= go
BIN       := bin/ctprof
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X github.com/ctprof/ctprof/internal/cli.version=$(VERSION)
# Fuzz time per target inside `make test` (bounded so CI stays short).
FUZZTIME  ?= 10s
# Per-package timeout of the test run; JVM tests start real JVMs.
TESTTIMEOUT ?= 30m
SHARED_DUMPS ?= $(abspath ../shared/dumps)

# Apache ECharts for the HTML report: fetched from the npm registry at this
# version, checked against the registry's published sha512 integrity, and
# embedded into the binary (never committed).
ECHARTS_VERSION   := 5.6.0
ECHARTS_INTEGRITY := sha512-oTbVTsXfKuEhxftHqL5xprgLoc0k7uScAwtryCgWF6hPYFLRwOUHiFmHGCBKP5NPFNkDVopOieyUqYGH8Fa3kA==
ECHARTS_JS        := internal/report/assets/echarts.min.js

# Third-party Java libraries (Apache Derby, H2, Log4j, ...) that tests run
# under load: pinned by version and sha256 in testdata/javalibs/libraries.txt,
# fetched with Maven (mvn dependency:copy, so the user's Maven settings and
# mirrors apply; Maven Central by default) into build/javalibs (never
# committed).
JAVALIBS_PINS := testdata/javalibs/libraries.txt
JAVALIBS_DIR  := build/javalibs
MVN           ?= mvn

.PHONY: all build deps assets javalibs otelcol test unit fuzz vet bench demo fmt lint clean help

all: build

help:
	@echo "make build   static binary into ./bin (CGO_ENABLED=0); fetches ECharts first (make assets)"
	@echo "make demo    start a contended Java program, profile it live (ctprof attach), write an HTML report"
	@echo "make test    install what is missing, vet, run every test (real JVMs included) and short fuzz runs"
	@echo "make javalibs fetch the pinned jars the library tests run, with Maven (build/javalibs, sha256-checked)"
	@echo "make otelcol  build the OpenTelemetry Collector the OTLP tests send to (build/otelcol-ctprof-test)"
	@echo "make bench   parser, /proc sweep, scrape, process-exporter and one-shot benchmarks (docs/PERFORMANCE.md)"
	@echo "make fmt     gofmt the tree;  make lint  gofmt check + go vet"

build: assets
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/ctprof

# deps checks (and, as root, installs) the JDKs and tools the tests need.
deps:
	@bash scripts/deps.sh

assets: $(ECHARTS_JS)

$(ECHARTS_JS):
	@command -v npm >/dev/null || { echo "assets: npm is needed to fetch ECharts (Debian: apt-get install npm; make deps does it as root)" >&2; exit 1; }
	@mkdir -p build/npm
	cd build/npm && npm pack --silent echarts@$(ECHARTS_VERSION) >/dev/null
	@got="sha512-$$(openssl dgst -sha512 -binary build/npm/echarts-$(ECHARTS_VERSION).tgz | base64 -w0)"; \
	if [ "$$got" != "$(ECHARTS_INTEGRITY)" ]; then \
		echo "assets: echarts-$(ECHARTS_VERSION).tgz has integrity $$got, want $(ECHARTS_INTEGRITY): refusing it" >&2; exit 1; \
	fi
	tar -xzf build/npm/echarts-$(ECHARTS_VERSION).tgz -O package/dist/echarts.min.js > $@.tmp && mv $@.tmp $@

# Every pinned jar is (re)checked on each run, so a jar changed in place is
# refused as well as a bad download; a good one is not fetched again. Each
# missing or bad jar is fetched with `mvn dependency:copy` (only the artifact
# itself, no transitive dependencies: those are pinned on their own lines)
# into a scratch directory of its own run, and moved into place only if its
# sha256 matches the pin. mvn runs from the scratch directory so that no
# pom.xml around it is read.
javalibs:
	@command -v $(MVN) >/dev/null || { echo "javalibs: Maven ($(MVN)) is needed to fetch the pinned jars (Debian: apt-get install maven; make deps does it as root)" >&2; exit 1; }
	@mkdir -p $(JAVALIBS_DIR)
	@tmp=$$(mktemp -d $(abspath $(JAVALIBS_DIR))/.fetch.XXXXXX) || exit 1; \
	trap 'rm -rf "$$tmp"' EXIT; \
	grep -v '^[[:space:]]*\(#\|$$\)' $(JAVALIBS_PINS) | while read -r coord want; do \
		rest=$${coord#*:}; artifact=$${rest%%:*}; version=$${rest#*:}; file=$$artifact-$$version; \
		case $$version in *:jar:*) file=$$artifact-$${version%%:*}-$${version##*:};; esac; \
		jar=$(JAVALIBS_DIR)/$$file.jar; \
		if [ -f "$$jar" ] && [ "$$(sha256sum "$$jar" | cut -d' ' -f1)" = "$$want" ]; then continue; fi; \
		echo "javalibs: fetching $$coord with Maven"; \
		out=$$(cd "$$tmp" && $(MVN) -B -q dependency:copy -Dartifact="$$coord" -DoutputDirectory="$$tmp" </dev/null 2>&1) && [ -f "$$tmp/$$file.jar" ] || { \
			printf '%s\n' "$$out" >&2; \
			echo "javalibs: $(MVN) could not fetch $$coord (its output is above; check the network and your Maven settings)" >&2; exit 1; }; \
		got=$$(sha256sum "$$tmp/$$file.jar" | cut -d' ' -f1); \
		if [ "$$got" != "$$want" ]; then \
			rm -f "$$tmp/$$file.jar" "$$jar"; \
			echo "javalibs: $$file.jar has sha256 $$got, want $$want (pinned in $(JAVALIBS_PINS)): refusing it" >&2; exit 1; \
		fi; \
		mv "$$tmp/$$file.jar" "$$jar" || exit 1; \
	done

# The OpenTelemetry Collector the OTLP profiles tests send to: built from
# the Collector's own Go modules (internal/testotelcol/collector, a module
# of its own, pinned by its go.sum: ctprof's binary does not link it) into
# build/. The first build fetches its modules through the Go module proxy.
OTELCOL := build/otelcol-ctprof-test
otelcol: $(OTELCOL)
$(OTELCOL): internal/testotelcol/collector/go.mod internal/testotelcol/collector/go.sum internal/testotelcol/collector/main.go
	@mkdir -p build
	cd internal/testotelcol/collector && $(GO) build -o $(abspath $(OTELCOL)) .

vet: assets
	$(GO) vet ./...

test: deps assets javalibs vet unit fuzz
	@echo "make test: all tests passed"

unit: javalibs otelcol
	@if [ -d "$(SHARED_DUMPS)" ]; then \
		echo "real-world dump corpus: $(SHARED_DUMPS) (the corpus tests run)"; \
	else \
		echo "real-world dump corpus: $(SHARED_DUMPS) not found (the corpus tests are skipped)"; \
	fi
	# One package at a time (-p 1): the tests start JVMs and measure timing on
	# a 2-core machine, and must not compete with each other for the CPUs.
	CTPROF_SHARED_DUMPS=$(SHARED_DUMPS) $(GO) test -p 1 -count=1 -timeout $(TESTTIMEOUT) ./...

# Every fuzz target (one per parser, in any package) runs for FUZZTIME; a
# crash fails the build and leaves the input under testdata/fuzz for a
# regression test (scripts/fuzz.sh, which also says why a target may run
# twice).
fuzz:
	@GO=$(GO) FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh

# The parser's benchmarks, then the budgets of the /proc sweep, the scrape,
# the comparison with process-exporter, a one-shot against jcmd, a cold
# sweep of a 30,000-thread process and a 20 s attach of a 10,000-thread JVM
# (docs/PERFORMANCE.md).
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -cpu 1 -count 3 ./pkg/threaddump/
	$(GO) test -run '^$$' -bench 'Parse4000Threads$$|Parse2000DeepThreads$$' -benchmem -cpu 2 -count 3 ./pkg/threaddump/
	$(GO) test -run '^$$' -bench OneShotAggregate2000Threads -benchmem -count 5 ./internal/analysis/
	$(GO) test -run '^$$' -bench 'ThreadSweep|ThreadFiles|FirstSweep' -benchmem -count 3 ./internal/procfs/
	$(GO) test -run '^$$' -bench 'LoadSymbols|FirstResolveLibjvm|ResolveAddresses' -benchmem -count 3 ./internal/symbolize/
	$(GO) test -run '^$$' -bench Scrape4000ThreadJVM -benchtime 200x -count 3 ./internal/metrics/
	$(GO) test -run '^$$' -bench VersusProcessExporter -benchtime 30x -count 3 ./internal/metrics/
	$(GO) test -run '^$$' -bench OneShotVersusJcmd -benchtime 7x -timeout 30m ./internal/sample/
	$(GO) test -run '^$$' -bench ColdSweep -benchmem -count 3 ./internal/procfs/
	$(GO) test -run '^$$' -bench Attach10kThreads -benchtime 3x -timeout 30m ./internal/sample/

demo: deps build
	@bash scripts/demo.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin build $(ECHARTS_JS)
