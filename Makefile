# Two commands on a fresh machine: `make run` and `make test`. Both set themselves up on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: setup run test test-fast test-slow lint format clean infra-setup synth deploy cfn-lint bench \
	console-assets console-assets-check browser console-screenshots wheel

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

## Start the whole stack locally: moto server, API on http://127.0.0.1:8000, dispatcher, workers.
run: setup
	$(BIN)/punctual local $(ARGS)

## Lint, type-check, then every test (unit, integration, end-to-end, infrastructure, browser).
test: lint infra-setup browser
	$(MAKE) --no-print-directory cfn-lint console-assets-check
	$(BIN)/pytest -n 2 --dist loadgroup

## The logic on in-memory fakes, and every other test that needs no moto and no local stack: the
## quick loop while developing (seconds). make test runs these and the moto-backed rest.
test-fast: setup
	$(BIN)/pytest tests/unit tests/contract tests/integration -m 'not moto and not e2e and not slow' -q -n 2

## Long-running tests (process chaos); CI runs them too.
test-slow: setup
	$(BIN)/pytest -m slow

## Benchmarks, not tests (~45 min on 2 cores): precision, precision under faults, created soon, cost per job, cold
## start, dispatcher claims, each repeated. Prints the medians and writes them, with PNG plots, to
## bench/results/ (docs/benchmarks.md). The plots need matplotlib (the `bench` extra), installed once
## here; make test does without it.
BENCH_STAMP := $(VENV)/.bench-stamp

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	touch $@

bench: $(BENCH_STAMP)
	$(BIN)/python -m bench.run $(ARGS)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

## The package as a wheel, to install before a release exists (docs/client.md, "Install"):
## dist/punctual_aws-<version>-py3-none-any.whl.
DIST ?= dist
## Built from a copy of the package's sources in a fresh directory: setuptools' build/ in the checkout
## keeps modules deleted since, and two builds sharing it collide (EEXIST on the dist-info).
WHEEL_SOURCES := pyproject.toml README.md punctual punctual_functions
wheel: setup
	@src=$$(mktemp -d) && trap 'rm -rf "$$src"' EXIT && \
	tar --exclude=__pycache__ -cf - $(WHEEL_SOURCES) | tar -xf - -C "$$src" && \
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir $(abspath $(DIST)) "$$src"

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis

## ---- Infrastructure (the CDK app in infra/): the pinned CDK CLI, cdk-nag, cfn-lint, the Lambda layer.
INFRA_STAMP := $(VENV)/.infra-stamp
NODE_STAMP := node_modules/.installed-stamp
CDK := node_modules/.bin/cdk
# Rule W3005 (a DependsOn that a GetAtt already implies) is how CDK writes every function's role.
CFN_LINT_IGNORE := W3005
# jsii prints a banner on every synth for a Node release past its end of life; it still works.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION ?= 18,20

$(INFRA_STAMP): $(STAMP) infra/requirements.txt
	$(BIN)/python -m pip install --quiet -r infra/requirements.txt
	touch $@

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

## CDK CLI, CDK libraries and the Lambda dependency layer (arm64 wheels, no Docker); cached.
infra-setup: $(INFRA_STAMP) $(NODE_STAMP)
	$(BIN)/python -m punctual.cdk.assets

# mypy checks punctual/cdk/ and follows tests/infrastructure into infra/: both import aws_cdk.
lint: infra-setup

## Synthesize the CloudFormation template into cdk.out/ (offline, no credentials, no Docker).
synth: infra-setup
	$(CDK) synth --quiet

## cfn-lint over the synthesized template.
cfn-lint: synth
	$(BIN)/cfn-lint --ignore-checks $(CFN_LINT_IGNORE) -- cdk.out/*.template.json

## Deploy to the AWS account of the current credentials (see docs/deploy.md); ARGS="-c stage=prod" etc.
deploy: infra-setup
	$(CDK) deploy $(ARGS)

## ---- The web console (punctual/console/, docs/console.md).
# Its front-end libraries are pinned in package.json and installed by npm; the copies the page loads
# are committed under punctual/console/static/vendor/ (so make run, pip install and punctual console
# need no Node). console-assets refreshes them after a version bump; make test checks they are
# byte-for-byte what npm installed.
CONSOLE_VENDOR := punctual/console/static/vendor
CONSOLE_ASSETS := preact/dist/preact.mjs:preact.mjs preact/hooks/dist/hooks.mjs:hooks.mjs \
	htm/dist/htm.module.js:htm.module.js uplot/dist/uPlot.iife.min.js:uPlot.iife.min.js \
	uplot/dist/uPlot.min.css:uPlot.min.css preact/LICENSE:LICENSE.preact htm/LICENSE:LICENSE.htm \
	uplot/LICENSE:LICENSE.uplot

console-assets: $(NODE_STAMP)
	mkdir -p $(CONSOLE_VENDOR)
	for pair in $(CONSOLE_ASSETS); do cp node_modules/$${pair%%:*} $(CONSOLE_VENDOR)/$${pair##*:}; done

console-assets-check: $(NODE_STAMP)
	@for pair in $(CONSOLE_ASSETS); do \
	  cmp -s node_modules/$${pair%%:*} $(CONSOLE_VENDOR)/$${pair##*:} || \
	  { echo "$(CONSOLE_VENDOR)/$${pair##*:} differs from node_modules/$${pair%%:*}: run make console-assets"; exit 1; }; \
	done

## Headless Chromium and its driver for the browser tests (Debian's packages; installed only when missing).
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  echo "installing chromium and chromium-driver (apt-get)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver; }

## Run the browser tests and keep their screenshots of the main views in docs/console/.
console-screenshots: setup browser
	PUNCTUAL_CONSOLE_SCREENSHOTS=docs/console $(BIN)/pytest tests/browser -q
