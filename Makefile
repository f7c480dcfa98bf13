# memory-review: `make demo` to see it, `make test` to check it.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
PG_TEST_URL ?= postgres://postgres@127.0.0.1:5432/test
STAMP := $(VENV)/.installed
NPM_DIR := tests/e2e
NPM_STAMP := $(NPM_DIR)/node_modules/.installed

.PHONY: demo test install constraints check lint test-sqlite test-postgres run clean oracle-sql oracle-check bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall only when the declared dependencies or their tested versions change: every package at
# the version constraints.txt names, so a release of ruff, Celery or Django between two runs cannot
# change what the suite runs on (`make constraints` moves them on, on purpose).
$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

constraints: | $(BIN)/python
	$(BIN)/pip install --quiet --upgrade --upgrade-strategy eager -e '.[dev]'
	{ sed -n '1,3p' constraints.txt; $(BIN)/pip freeze --exclude-editable; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
	touch $(STAMP)

# axe-core for the browser tests' accessibility walk, at the version tests/e2e/package-lock.json pins; again
# only when the lock changes. Without npm `make demo` still works: the walk then skips (fails under CI).
$(NPM_STAMP): $(NPM_DIR)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  npm ci --prefix $(NPM_DIR) --no-audit --no-fund --loglevel=error && touch $(NPM_STAMP); \
	else \
	  echo "npm not found: tests/e2e/test_every_screen.py will skip (apt-get install nodejs npm)"; \
	fi

install: $(STAMP) $(NPM_STAMP)

# The key that signs sessions and CSRF tokens on this machine, made once, never committed.
var/secret-key:
	@mkdir -p var && umask 077 && $(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(50))' > $@

demo: install var/secret-key
	$(BIN)/python manage.py migrate --noinput -v0
	$(BIN)/python manage.py seed_demo
	$(BIN)/python manage.py create_api_token --tenant acme --name demo-agent --file var/api-token
	@echo ""
	@echo "Log in as acme-lead / demo (also: acme-reviewer, acme-auditor, acme-labeler, globex-lead, admin; all with password demo)"
	@echo "Agents' API token for acme (in var/api-token): $$(cat var/api-token)"
	@echo "  curl -H \"Authorization: Bearer $$(cat var/api-token)\" -H 'Content-Type: application/json' \\"
	@echo "       -d '{\"text\": \"We moved production to eu-central-1 last night.\", \"source\": \"slack\"}' \\"
	@echo "       http://127.0.0.1:$(PORT)/api/v1/t/acme/events"
	$(BIN)/python manage.py run_demo --port $(PORT)

check: install var/secret-key
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

# The two passes run at once: they share no database, no broker (the worker drills run in the
# PostgreSQL pass alone, on their own Redis database) and no cache keys (tests/settings.py), and
# the PostgreSQL pass spends most of its time waiting on the database, browsers and workers.
# Each pass's output is printed whole when it ends.
test: check lint
	@echo "== both suites at once, SQLite and PostgreSQL; each prints its report when it ends =="
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-sqlite test-postgres
	@echo "== make test: checks, ruff, SQLite and PostgreSQL suites all passed =="

# The quick benchmarks, at sizes that finish in a few minutes in all; each prints its figures and
# a JSON line. BENCHMARKS.md gives each script's full-size command and figures. Each makes and
# throws away its own database, keys and settings (bench/throwaway.py); add BENCH_PG=URL to run
# the database-bound ones on a throwaway PostgreSQL database too.
BENCH_PG ?=
BENCH_ON = $(if $(BENCH_PG),--postgres $(BENCH_PG))
bench: install
	$(BIN)/python bench/calibration.py --cases 20000 --runs 3
	$(BIN)/python bench/stored_replay.py --verdicts 200000 $(BENCH_ON)
	$(BIN)/python bench/labeling.py --verdicts 20000 --labels 30 $(BENCH_ON)
	$(BIN)/python bench/audit_export.py --rows 20000 $(BENCH_ON)
	$(BIN)/python bench/verify_audit.py --sizes 10000,40000 $(BENCH_ON)
	$(BIN)/python bench/observe_event.py --events 3 --sizes 20,100,500 $(BENCH_ON)
	$(BIN)/python bench/pages.py --memories 20000 --repeats 10 $(BENCH_ON)
	$(BIN)/python bench/review_browser.py --decisions 20 --cold-loads 5 $(BENCH_ON)

oracle-sql: install var/secret-key
	$(BIN)/python manage.py render_oracle_sql

clean:
	rm -rf $(VENV) var *.egg-info node_modules $(NPM_DIR)/node_modules

# On a machine with Oracle (docs/oracle.md): install the set-up twice, prove it, run the tests there.
ORACLE_AS_OWNER = ORACLE_USER=memory_owner ORACLE_PASSWORD="$$ORACLE_OWNER_PASSWORD" ORACLE_SCHEMA=
oracle-check: install var/secret-key
	@test -n "$$ORACLE_DSN" && test -n "$$ORACLE_OWNER_PASSWORD" && test -n "$$ORACLE_APP_PASSWORD" \
	  || { echo "set ORACLE_DSN, ORACLE_OWNER_PASSWORD and ORACLE_APP_PASSWORD (docs/oracle.md)"; exit 1; }
	$(ORACLE_AS_OWNER) $(BIN)/python manage.py migrate --noinput
	$(ORACLE_AS_OWNER) $(BIN)/python manage.py apply_oracle_sql
	$(ORACLE_AS_OWNER) $(BIN)/python manage.py apply_oracle_sql  # again: it must re-run cleanly
	$(ORACLE_AS_OWNER) $(BIN)/python manage.py seed_demo
	$(ORACLE_AS_OWNER) $(BIN)/python manage.py oracle_check --app-user memory_app
	ORACLE_USER="$${ORACLE_TEST_USER:-system}" ORACLE_PASSWORD="$$ORACLE_TEST_PASSWORD" ORACLE_SCHEMA= \
	  $(BIN)/python -m pytest -q tests/test_tenancy.py tests/test_audit_chain.py tests/test_lifecycle.py
