# Two set-up commands, on a machine with only Python, pip and apt: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
HOST ?= 127.0.0.1
PORT ?= 8000
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
HTMX_VERSION := 2.0.11
# Python writes its bytecode caches even where the environment says not to (PYTHONDONTWRITEBYTECODE=1 on some
# machines): every pytest worker and every subprocess the tests start would otherwise compile the project again
# (collection: 6.7 s of CPU without the caches, 4.4 s with them).
export PYTHONDONTWRITEBYTECODE :=

# make serve: 0 sizes gunicorn from CPUs and memory (config/serve.py prints how). Diagnosis POSTs (the paste, the
# API, the share form) per client address, and addresses that skip that limit (e.g. a CI runner's).
WORKERS ?= 0
DIAGNOSE_RATE ?= 10r/m
DIAGNOSE_BURST ?= 5
RATE_EXEMPT ?=

SETUPTOOLS := $(shell grep -m1 '^setuptools==' requirements-dev.txt)

.PHONY: run serve loadtest test check audit venv install install-dev migrate content claims browser nginx wrk bench score clean vendor-htmx

run: install migrate content
	$(PY) manage.py runserver $(HOST):$(PORT)

# Production: nginx on $(HOST):$(PORT) in front of gunicorn on a unix socket (config/serve.py, deploy/nginx.conf),
# DEBUG off, static files by WhiteNoise. Needs SECRET_KEY (see README, "Production").
serve: install nginx
	@test -n "$$SECRET_KEY" || { echo "make serve: set SECRET_KEY first, e.g. export SECRET_KEY=\$$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')"; exit 1; }
	mkdir -p var
	DEBUG=0 $(PY) manage.py migrate --noinput
	DEBUG=0 $(PY) manage.py load_content
	DEBUG=0 $(PY) manage.py collectstatic --noinput --verbosity 0
	DEBUG=0 $(PY) -m config.serve --host $(HOST) --port $(PORT) --workers $(WORKERS) \
		--rate $(DIAGNOSE_RATE) --burst $(DIAGNOSE_BURST) --rate-exempt "$(RATE_EXEMPT)"

LINTED := diagnosis kb troubleshooter config tests tools

test: install-dev browser nginx
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(PY) -m pytest -n auto
	@echo "== the tests that touch the database (browser ones aside) again, on a throwaway PostgreSQL (tests/postgres/run.sh) =="
	bash tests/postgres/run.sh $(PY) -m pytest -n auto -m "database and not browser"

# The inner loop: lint, then the tests that need no browser, no database and no served stack.
check: install-dev
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(PY) -m pytest -n auto -q -m "not browser and not database and not proxy and not slow"

# Known vulnerabilities in the virtualenv's packages (pip-audit, pinned in requirements-dev.txt): fails when one is
# found; where its service cannot answer it says so plainly and passes (see tests/audit/run.py).
audit: install-dev
	$(PY) tests/audit/run.py $(VENV)/bin/pip-audit --strict --progress-spinner off --vulnerability-service pypi

$(VENV)/.created:
	$(PYTHON) -m venv $(VENV) || { $(SUDO) apt-get update && $(SUDO) apt-get install -y python3-venv && $(PYTHON) -m venv $(VENV); }
	$(PIP) install --quiet --upgrade pip "$(SETUPTOOLS)"
	touch $@

venv: $(VENV)/.created

$(VENV)/.installed: $(VENV)/.created requirements.txt
	$(PIP) install --quiet -r requirements.txt "$(SETUPTOOLS)"
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(PIP) install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

migrate: install
	mkdir -p var
	$(PY) manage.py migrate --noinput

content: migrate
	$(PY) manage.py load_content

# Claims in content/ that rest on reading alone (a source and the day it was read), oldest first: read those again.
claims: install
	$(PY) manage.py claims

# Browser tests drive Debian's chromium through Playwright (no browser download).
browser:
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends chromium; }

# The proxy of `make serve`, and of the test that starts it (tests/deploy). Debian puts it in /usr/sbin.
nginx:
	@command -v nginx >/dev/null 2>&1 || test -x /usr/sbin/nginx || { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends nginx; }

# The HTTP load generator of `make bench` (page throughput) and `make loadtest`.
wrk:
	@command -v wrk >/dev/null 2>&1 || { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends wrk; }

bench: install content wrk
	$(PY) manage.py bench

# Serves with `make serve` (nginx + gunicorn) on loopback and runs a bounded mixed load with wrk (from apt if
# missing), with adversarial diagnosis posts and slow clients beside it.
loadtest: install nginx wrk
	bash tests/load/run.sh

# The shared scorer on ../shared/eval-dev, then the project's own labelled logs with a reliability table, then the
# real pastes from public threads (tests/fixtures/pastes: tuned and three held-out sets).
score: install content
	$(PY) ../shared/eval-dev/score.py ../shared/eval-dev --project . -v
	$(PY) manage.py reliability --misses
	$(PY) manage.py reliability --misses --root tests/fixtures/pastes

# Re-vendor htmx from the npm registry (the file is committed; run only to upgrade).
vendor-htmx:
	cd /tmp && npm pack htmx.org@$(HTMX_VERSION) >/dev/null && tar xzf htmx.org-$(HTMX_VERSION).tgz package/dist/htmx.min.js
	cp /tmp/package/dist/htmx.min.js static/vendor/htmx-$(HTMX_VERSION).min.js

clean:
	rm -rf $(VENV) var .pytest_cache
