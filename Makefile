# memory-review: `make demo` to see it, `make test` to check it.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
PG_TEST_URL ?= postgres://postgres@127.0.0.1:5432/test
STAMP := $(VENV)/.installed

.PHONY: demo test install check lint test-sqlite test-postgres run clean oracle-sql

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall only when the declared dependencies change.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	@mkdir -p var
	$(BIN)/python manage.py migrate --noinput -v0
	$(BIN)/python manage.py seed_demo
	@echo ""
	@echo "memory-review is serving on http://127.0.0.1:$(PORT)/  (Ctrl-C stops it)"
	@echo "Log in as acme-lead / demo (also: acme-reviewer, acme-auditor, acme-labeler, globex-lead, admin; all with password demo)"
	$(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

check: install
	$(BIN)/python manage.py check --fail-level WARNING

lint: install
	$(BIN)/ruff check .

test-sqlite: install
	@echo "== test suite on SQLite =="
	env -u DATABASE_URL -u ORACLE_DSN $(BIN)/python -m pytest -q

test-postgres: install
	@echo "== test suite on PostgreSQL ($(PG_TEST_URL)) =="
	@$(BIN)/python -c "import psycopg, sys; psycopg.connect('$(PG_TEST_URL)', connect_timeout=3).close()" \
	  || { echo "PostgreSQL is not reachable at $(PG_TEST_URL): start it, or set PG_TEST_URL"; exit 1; }
	env -u ORACLE_DSN DATABASE_URL=$(PG_TEST_URL) $(BIN)/python -m pytest -q

test: check lint test-sqlite test-postgres
	@echo "== make test: checks, ruff, SQLite and PostgreSQL suites all passed =="

oracle-sql: install
	$(BIN)/python manage.py render_oracle_sql

clean:
	rm -rf $(VENV) var *.egg-info
