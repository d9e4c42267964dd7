"""Settings come from the environment; production refuses to start without a secret."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_settings(
    tmp_path,
    printed="settings.DATABASES['default']['ENGINE'], settings.DEBUG, bool(settings.SECRET_KEY)",
    **env,
):
    """The settings loaded in a new process with `env` on a clean environment; it prints `printed`."""
    dropped = ("DEBUG", "SECRET_KEY", "DATABASE_URL", "REDIS_URL", "DB_PGBOUNCER", "DB_SERVER_SIDE_BINDING")
    clean = {k: v for k, v in os.environ.items() if k not in dropped}
    clean.update(HELPDESK_VAR_DIR=str(tmp_path), **env)
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); from django.conf import settings; print({printed})"],
        cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_with_nothing_set_it_runs_on_sqlite_with_a_generated_secret(tmp_path):
    result = _load_settings(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.sqlite3", "True", "True"]
    assert (tmp_path / "dev-secret-key").exists()
    assert (tmp_path / "dev-secret-key").stat().st_mode & 0o077 == 0


def test_production_without_a_secret_key_refuses_to_start(tmp_path):
    result = _load_settings(tmp_path, DEBUG="false")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_production_with_a_secret_key_and_postgres(tmp_path):
    result = _load_settings(
        tmp_path, DEBUG="false", SECRET_KEY="x" * 50, DATABASE_URL="postgres://u@db.example:5432/helpdesk"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.postgresql", "False", "True"]


def test_a_malformed_boolean_is_an_error_not_a_guess(tmp_path):
    result = _load_settings(tmp_path, DEBUG="maybe")
    assert result.returncode != 0
    assert "DEBUG must be a boolean" in result.stderr


def test_the_embedded_queue_keeps_every_file_under_the_var_dir(tmp_path):
    """The file-system broker writes its messages and its exchange table under HELPDESK_VAR_DIR, never into
    the working directory (kombu's default `control_folder` is ./control)."""
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    env = {
        k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "DATABASE_URL", "REDIS_URL")
    }
    env.update(HELPDESK_VAR_DIR=str(tmp_path / "var"), PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from helpdesk.celery import app; "
         "app.send_task('tickets.tasks.purge_expired_tickets')"],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert list(workdir.iterdir()) == []
    assert (tmp_path / "var" / "queue" / "control").is_dir()
    assert any(path.suffix == ".msg" for path in (tmp_path / "var" / "queue").iterdir())


@pytest.mark.redis
def test_the_redis_cache_keeps_one_client_per_connection_pool():
    from django.core.cache import cache

    client = cache.client.get_client(write=True)
    # when
    cache.set("settings-test", {"n": 1}, 30)
    # then every operation goes through the same client, and they still work against the real server
    assert cache.client.get_client() is client
    assert cache.get_many(["settings-test", "missing"]) == {"settings-test": {"n": 1}}
    assert cache.add("settings-test", 2) is False
    assert client.exists(cache.make_and_validate_key("settings-test")) == 1


def test_the_deploy_checks_pass_with_production_variables(tmp_path):
    """`manage.py check --deploy` with DEBUG=false: HSTS, SSL redirect and secure cookies are on by default."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "DATABASE_URL", "REDIS_URL")
    }
    env.update(
        HELPDESK_VAR_DIR=str(tmp_path),
        DEBUG="false",
        SECRET_KEY="k3y-" + "a1B2c3D4e5F6g7H8i9J0" * 3,
        ALLOWED_HOSTS="help.example.com",
        SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto: https",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_https_settings_come_from_the_environment(tmp_path):
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, s.SECURE_HSTS_PRELOAD, s.SESSION_COOKIE_SECURE, "
        "s.CSRF_COOKIE_SECURE, s.SECURE_PROXY_SSL_HEADER)"
    )
    env = {
        k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "DATABASE_URL", "REDIS_URL")
    }
    env.update(
        HELPDESK_VAR_DIR=str(tmp_path), DEBUG="false", SECRET_KEY="x" * 50, SECURE_SSL_REDIRECT="false",
        SECURE_HSTS_SECONDS="600", SECURE_HSTS_PRELOAD="no", SESSION_COOKIE_SECURE="true",
        SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto: https",
    )  # fmt: skip
    env.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().split(maxsplit=5) == [
        "False", "600", "False", "True", "True", "('HTTP_X_FORWARDED_PROTO', 'https')"
    ]  # fmt: skip
    # a malformed header is an error, not a guess
    env["SECURE_PROXY_SSL_HEADER"] = "https"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode != 0 and "SECURE_PROXY_SSL_HEADER must look like" in result.stderr


def test_a_repeated_cache_error_is_logged_once_per_interval(monkeypatch, caplog):
    """django-redis logs every ignored error; during an outage that is every cache operation of every request."""
    import logging

    from helpdesk.logs import OncePer

    monkeypatch.setattr(OncePer, "last", {})
    clock = iter([100.0, 110.0, 131.0])
    monkeypatch.setattr(OncePer, "clock", staticmethod(lambda: next(clock)))
    # when the same error is logged three times: at 0 s, 10 s and 31 s
    with caplog.at_level(logging.WARNING, logger="helpdesk.cache"):
        for _ in range(3):
            logging.getLogger("helpdesk.cache").error("Exception ignored")
    # then the second is dropped (within 30 s of the first), the third passes
    assert [r.getMessage() for r in caplog.records if r.name == "helpdesk.cache"] == ["Exception ignored"] * 2


def test_a_cache_error_still_passes_after_logging_is_configured_again(monkeypatch, settings):
    """Celery's worker runs dictConfig after Django did; dictConfig adds the logger's filters again without
    removing the old ones, and the second copy must not drop what the first let through."""
    import logging
    import logging.config

    from helpdesk.logs import OncePer

    class Collect(logging.Handler):
        def __init__(self):
            super().__init__()
            self.messages = []

        def emit(self, record):
            self.messages.append(record.getMessage())

    monkeypatch.setattr(OncePer, "last", {})
    logging.config.dictConfig(settings.LOGGING)
    logging.config.dictConfig(settings.LOGGING)
    cache_logger, collect = logging.getLogger("helpdesk.cache"), Collect()
    assert sum(isinstance(f, OncePer) for f in cache_logger.filters) >= 2
    cache_logger.addHandler(collect)
    try:
        cache_logger.error("Exception ignored")
        cache_logger.error("Exception ignored")  # within 30 s of the first: dropped
    finally:
        cache_logger.removeHandler(collect)
    assert collect.messages == ["Exception ignored"]


def test_loading_the_template_tag_libraries_registers_no_admin(tmp_path):
    """`manage.py check` runs its checks in an order that varies between processes: the templates check loads every
    tag library, and one that imported an admin module registered admins before the admin's autodiscovery (the
    admin check then met LicenseAdmin pointing at a Template admin not registered yet: admin.E039)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(HELPDESK_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="helpdesk.settings")
    code = (
        "import django; django.setup()\n"
        "from django.template.backends.django import get_installed_libraries\n"
        "get_installed_libraries()\n"
        "from django.contrib import admin\n"
        "print(len(admin.site._registry))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0"]


@pytest.mark.parametrize(
    "env, expected",
    [({}, "True"), ({"DB_PGBOUNCER": "true"}, "False"), ({"DB_SERVER_SIDE_BINDING": "false"}, "False")],
)
def test_postgresql_binds_values_on_the_server_unless_behind_pgbouncer(tmp_path, env, expected):
    result = _load_settings(
        tmp_path,
        printed="settings.DATABASES['default']['OPTIONS']['server_side_binding']",
        DATABASE_URL="postgres://u@db.example:5432/helpdesk",
        **env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [expected]


@pytest.mark.postgres
def test_the_suites_postgresql_connection_binds_on_the_server(db):
    import psycopg
    from django.db import connection

    with connection.cursor() as cursor:
        assert not isinstance(cursor.cursor, psycopg.ClientCursor)
        cursor.execute("SELECT %s::int + %s, %s", [1, 2, "text"])
        assert cursor.fetchone() == (3, "text")


@pytest.mark.parametrize(
    "url, transport, ssl",
    [
        ("redis://127.0.0.1:6379/0", "helpdesk.broker_redis.Transport", "False"),
        ("rediss://127.0.0.1:6380/0", "kombu.transport.redis.Transport", "True"),
        ("sentinel://127.0.0.1:26379/0", "kombu.transport.redis.SentinelTransport", "False"),
    ],
)
def test_the_broker_keeps_the_transport_of_a_tls_or_sentinel_url(tmp_path, url, transport, ssl):
    result = _load_settings(
        tmp_path,
        printed="(lambda c: f'{type(c.transport).__module__}.{type(c.transport).__name__} {bool(c.ssl)}')"
        "(__import__('helpdesk.celery').celery.app.connection_for_write())",
        REDIS_URL=url,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [transport, ssl]
