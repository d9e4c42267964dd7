#!/usr/bin/env bash
# The whole test suite: against PostgreSQL and Redis (when reachable; under CI=true they must be), and on the
# embedded default (SQLite, no Redis) so that it stays honest. The two passes run at the same time, each in
# TEST_WORKERS pytest-xdist processes (tests/xdist_env.py gives each worker its own Redis database and var/
# folder; pytest-django its own test database): on 2 cores that is what keeps both cores busy (docs/operations.md,
# "The test suite"). The SQLite pass's output is printed when the PostgreSQL pass has finished.
# Arguments go to pytest (both passes): `bash tests/run.sh -k agents -x`; `-n 0` runs each pass in one process.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
PG_URL=${TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/helpdesk}
REDIS=${TEST_REDIS_URL:-redis://127.0.0.1:6379/14}  # worker N uses database 14+N
WORKERS=${TEST_WORKERS:-2}
XDIST=(-n "$WORKERS" -p tests.xdist_env)
# Compiled bytecode is kept, under var/pycache (outside the sources and the virtualenv), even where the
# environment sets PYTHONDONTWRITEBYTECODE (as container images often do): without it every pytest process
# compiled again the modules pytest rewrites for its asserts (the tests', and every pytest plugin's package,
# schemathesis's and hypothesis's among them) and ours, 13.3 s of CPU to collect the suite instead of 4.9 s
# (measured 2026-11-26), and each pass starts three (two workers and their controller).
export PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX:-$PWD/var/pycache}
unset PYTHONDONTWRITEBYTECODE

reachable() { # host port
  $PY - "$1" "$2" <<'PYEOF'
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2).close()
except OSError:
    sys.exit(1)
PYEOF
}
hostport() { $PY -c "import sys, urllib.parse as u; p = u.urlparse(sys.argv[1]); print(p.hostname or '127.0.0.1', p.port or sys.argv[2])" "$1" "$2"; }

# The admin's browser test drives Debian's Chromium (never a browser download): install it when it is missing
# and we are root; without it the test is skipped, except under CI=true, where that is a failure.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "== Installing Debian's chromium for the browser test"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 \
    || echo "apt-get could not install chromium" >&2
fi
if ! command -v chromium >/dev/null 2>&1; then
  if [ "${CI:-}" = "true" ]; then
    echo "Chromium is not installed (apt-get install chromium), and CI=true makes that a failure." >&2
    exit 1
  fi
  echo "== Chromium is not installed: the browser test will be skipped"
fi

# The IMAP polling tests start Debian's Dovecot with a throwaway configuration (tests/dovecot.py): install it the
# same way when it is missing (its system service is not started); skipped without it, except under CI=true.
dovecot_installed() { command -v dovecot >/dev/null 2>&1 || [ -x /usr/sbin/dovecot ]; }
if ! dovecot_installed && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "== Installing Debian's dovecot-imapd for the IMAP polling tests"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dovecot-imapd) >/dev/null 2>&1 \
    || echo "apt-get could not install dovecot-imapd" >&2
fi
if ! dovecot_installed; then
  if [ "${CI:-}" = "true" ]; then
    echo "Dovecot is not installed (apt-get install dovecot-imapd), and CI=true makes that a failure." >&2
    exit 1
  fi
  echo "== Dovecot is not installed: the IMAP polling tests will be skipped"
fi

status=0
sqlite_pass() {
  local started=$SECONDS
  env -u DATABASE_URL -u REDIS_URL HELPDESK_VAR_DIR="$(mktemp -d)" HELPDESK_TEST_BACKENDS=sqlite \
    $PY -m pytest "${XDIST[@]}" "$@"
  local code=$?
  echo "== SQLite: $((SECONDS - started)) s"
  return $code
}

if reachable $(hostport "$PG_URL" 5432) && reachable $(hostport "$REDIS" 6379); then
  sqlite_log=$(mktemp)
  sqlite_pass "$@" >"$sqlite_log" 2>&1 &
  sqlite_pid=$!
  trap 'kill "$sqlite_pid" 2>/dev/null; rm -f "$sqlite_log"' EXIT
  echo "== PostgreSQL + Redis (the SQLite pass runs meanwhile; its output follows)"
  started=$SECONDS
  DATABASE_URL=$PG_URL REDIS_URL=$REDIS HELPDESK_TEST_BACKENDS=postgres,redis HELPDESK_TEST_BROWSERS_ELSEWHERE=1 \
    $PY -m pytest "${XDIST[@]}" "$@" || status=1
  echo "== PostgreSQL + Redis: $((SECONDS - started)) s"
  wait "$sqlite_pid" || status=1
  echo "== SQLite (embedded default)"
  cat "$sqlite_log"
elif [ "${CI:-}" = "true" ]; then
  echo "PostgreSQL ($PG_URL) or Redis ($REDIS) is not reachable, and CI=true makes that a failure." >&2
  exit 1
else
  echo "== PostgreSQL or Redis not reachable: only the SQLite run (CI would fail here)"
  echo "== SQLite (embedded default)"
  sqlite_pass "$@" || status=1
fi
exit $status
