# Two commands on a fresh machine: `make run` and `make test`. Both set themselves up on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: setup run test test-fast test-slow lint format clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

## Start the whole stack locally: moto server, API on http://127.0.0.1:8000, dispatcher, workers.
run: setup
	$(BIN)/punctual local $(ARGS)

## Lint, type-check, then every test (unit, integration, end-to-end).
test: lint
	$(BIN)/pytest -n 2 --dist loadgroup

## Unit and integration tests only (no local stack): the quick loop while developing.
test-fast: setup
	$(BIN)/pytest -m 'not e2e and not slow' -q

## Long-running tests (chaos); CI runs them too once they exist.
test-slow: setup
	$(BIN)/pytest -m slow

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
