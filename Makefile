# Two set-up commands, on a machine with only Python, pip and apt: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
HOST ?= 127.0.0.1
PORT ?= 8000
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
HTMX_VERSION := 2.0.11

WORKERS ?= $(shell echo $$(( $$(nproc) * 2 + 1 )))
# gunicorn's default access log line, less the query string (%(r)s -> method, path, protocol) and the referer
# (%(f)s, which carries the previous page's query string): a log line pasted into a search link, tokens and
# all, must not be kept in the access log. See README, "Pasted logs and secrets".
ACCESS_LOG_FORMAT := %(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s"

SETUPTOOLS := $(shell grep -m1 '^setuptools==' requirements-dev.txt)

.PHONY: run serve loadtest test audit venv install install-dev migrate content browser bench score clean vendor-htmx

run: install migrate content
	$(PY) manage.py runserver $(HOST):$(PORT)

# Production: gunicorn, DEBUG off, static files by WhiteNoise. Needs SECRET_KEY (see README, "Production").
serve: install
	@test -n "$$SECRET_KEY" || { echo "make serve: set SECRET_KEY first, e.g. export SECRET_KEY=\$$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')"; exit 1; }
	mkdir -p var
	DEBUG=0 $(PY) manage.py migrate --noinput
	DEBUG=0 $(PY) manage.py load_content
	DEBUG=0 $(PY) manage.py collectstatic --noinput --verbosity 0
	DEBUG=0 $(VENV)/bin/gunicorn config.wsgi --bind $(HOST):$(PORT) --workers $(WORKERS) --access-logfile - --access-logformat '$(ACCESS_LOG_FORMAT)' --timeout 120

test: install-dev browser
	$(VENV)/bin/ruff check kb troubleshooter config tests
	$(PY) -m pytest
	@echo "== the tests that touch the database (browser ones aside) again on PostgreSQL, started on loopback by tests/postgres/start.sh =="
	DATABASE_URL="$$(bash tests/postgres/start.sh)" $(PY) -m pytest -m "database and not browser"

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

# Browser tests drive Debian's chromium through Playwright (no browser download).
browser:
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends chromium; }

bench: install content
	$(PY) manage.py bench

# Serves with gunicorn on loopback and runs a bounded mixed load with wrk (installed from apt if missing).
loadtest: install
	bash tests/load/run.sh

# The shared scorer on ../shared/eval-dev, then the project's own labelled logs with a reliability table.
score: install content
	$(PY) ../shared/eval-dev/score.py ../shared/eval-dev --project . -v
	$(PY) manage.py reliability --misses

# Re-vendor htmx from the npm registry (the file is committed; run only to upgrade).
vendor-htmx:
	cd /tmp && npm pack htmx.org@$(HTMX_VERSION) >/dev/null && tar xzf htmx.org-$(HTMX_VERSION).tgz package/dist/htmx.min.js
	cp /tmp/package/dist/htmx.min.js static/vendor/htmx-$(HTMX_VERSION).min.js

clean:
	rm -rf $(VENV) var .pytest_cache
