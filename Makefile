# The two commands of the README:
#   make run    set up everything from a fresh clone and run the service (web, worker, beat)
#   make test   run the whole test suite (PostgreSQL + Redis when reachable, and SQLite; tests/run.sh)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
SMTP_PORT ?= 2525

.PHONY: run test venv lint

$(VENV)/.installed: requirements.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	@touch $@

venv: $(VENV)/.installed

# Links in e-mails (invitations, confirmations) point at this server unless HELPDESK_APP_URL is set.
run: export HELPDESK_APP_URL ?= http://$(HOST):$(PORT)
run: venv
	$(PY) manage.py migrate --noinput
	$(PY) manage.py demo_license --base-url http://$(HOST):$(PORT)
	@echo "Inbound mail: SMTP on $(HOST):$(SMTP_PORT). Send a test mail to the address printed above, e.g.:"
	@echo "  swaks --server $(HOST):$(SMTP_PORT) --to ADDRESS --from you@example.com --header 'Subject: Test'"
	@echo "  $(PY) -c \"import smtplib; smtplib.SMTP('$(HOST)', $(SMTP_PORT)).sendmail('you@example.com', ['ADDRESS'], b'From: you@example.com\\r\\nSubject: Test\\r\\n\\r\\nHello')\""
	@# Ctrl-C stops every process and exits 0 (helpdesk/supervisor.py). One NAME=COMMAND per process.
	@$(PY) -m helpdesk.supervisor \
	  "worker=$(VENV)/bin/celery -A helpdesk worker --beat --loglevel=INFO --concurrency=2 --schedule=var/celerybeat-schedule" \
	  "smtp=$(PY) manage.py smtp_inbound --host $(HOST) --port $(SMTP_PORT)" \
	  "web=$(PY) manage.py runserver $(HOST):$(PORT) --noreload"

test: venv
	@bash tests/run.sh

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
