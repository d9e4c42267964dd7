"""Personas (owner, agent, viewer of one license; an outsider from another), each with an API client."""

import base64
import os
import sys

import pytest
from django.conf import settings
from django.core.cache import cache
from django.db.backends.signals import connection_created
from django.test import override_settings
from rest_framework.test import APIClient

from accounts import services
from accounts.models import ROLE_NORMAL, ROLE_VIEWER
from helpdesk.context import SYSTEM, reset_actor, set_actor
from tests.audit_helpers import let_the_test_flush_empty_the_audit_log
from tests.factories import AgentFactory, LicenseFactory

let_the_test_flush_empty_the_audit_log()
pytest.register_assert_rewrite("tests.resource_tests")  # its asserts explain failures, as a test module's do

BACKENDS = set(filter(None, os.environ.get("HELPDESK_TEST_BACKENDS", "").split(",")))

if os.environ.get("PYTEST_XDIST_WORKER") and "tests.xdist_env" not in sys.modules:
    raise pytest.UsageError(
        "pytest -n needs -p tests.xdist_env (as tests/run.sh passes it): each worker its own Redis database "
        "and var/ folder, or the workers empty each other's cache"
    )


def _commit_without_waiting_for_the_disk(sender, connection, **kwargs):
    """The test database is thrown away: a commit need not wait for its WAL to reach the disk (a crash loses
    only the last commits, never consistency; another connection sees a commit at once either way). The
    transactional tests commit every write and empty every table after each test."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET synchronous_commit TO off")


connection_created.connect(_commit_without_waiting_for_the_disk)


@pytest.fixture(scope="session")
def django_db_setup(request, django_test_environment, django_db_blocker, django_db_modify_db_settings):
    """pytest-django's database setup, except that each worker's database is a copy of one migrated template
    (tests/template_db.py) rather than migrated again: on PostgreSQL a database dropped at the end, on SQLite the
    in-memory one."""
    from django.db import connections
    from django.test.utils import setup_databases, teardown_databases
    from pytest_django.fixtures import _get_databases_for_setup

    from tests import template_db

    verbosity = request.config.option.verbose
    aliases, serialized_aliases = _get_databases_for_setup(request.session.items)
    arguments = {"aliases": aliases, "serialized_aliases": serialized_aliases}
    with django_db_blocker.unblock():
        if settings.IS_POSTGRES:
            name = template_db.prepare(setup_databases, verbosity)
            setup_databases(verbosity=verbosity, interactive=False, keepdb=True, **arguments)
            yield
            template_db.drop(name)
        elif template_db.sqlite_in_memory(aliases):
            template = template_db.sqlite_template(setup_databases, teardown_databases, verbosity)
            old_name = template_db.sqlite_load(template, serialize="default" in serialized_aliases)
            yield
            connections["default"].creation.destroy_test_db(old_name, verbosity)
        else:
            config = setup_databases(verbosity=verbosity, interactive=False, **arguments)
            yield
            teardown_databases(config, verbosity=verbosity)


@pytest.fixture(autouse=True, scope="session")
def _no_dns_outside_the_machine():
    """DNS look-ups (e-mail domain verification, DKIM checks of received mail) never leave the machine: an
    empty DNS server on loopback answers them (NXDOMAIN), unless a test starts its own (`dns_server`)."""
    from tests.dns_helpers import DnsServer

    server = DnsServer().start()
    try:
        with override_settings(HELPDESK_DNS_RESOLVER=server.address, HELPDESK_DNS_TIMEOUT_SECONDS=2):
            yield
    finally:
        server.stop()


@pytest.fixture(autouse=True, scope="session")
def _cheap_password_hashing():
    """MD5 instead of PBKDF2's million rounds (~0.2 s of CPU a hash): the tests check that a password is
    accepted or refused, not how slowly it is hashed."""
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


def pytest_collection_modifyitems(config, items):
    on_postgres = settings.IS_POSTGRES
    has_redis = bool(settings.REDIS_URL)
    # tests/run.sh's PostgreSQL pass, beside the SQLite pass: the browser tests drive pages whose code is the
    # same on both backends (the admin's queries are tested in both passes without a browser), so they run once,
    # in the SQLite pass, the embedded default a new user tries first (~40 s of the suite's CPU, Chromium's)
    browsers_elsewhere = os.environ.get("HELPDESK_TEST_BROWSERS_ELSEWHERE") == "1"
    for item in items:
        if "postgres" in item.keywords and not on_postgres:
            item.add_marker(pytest.mark.skip(reason="PostgreSQL only (runs in the PostgreSQL pass)"))
        if "redis" in item.keywords and not has_redis:
            item.add_marker(pytest.mark.skip(reason="needs Redis (runs in the PostgreSQL + Redis pass)"))
        if "browser" in item.keywords and browsers_elsewhere:
            item.add_marker(
                pytest.mark.skip(reason="a browser test: tests/run.sh runs them in the SQLite pass")
            )


@pytest.fixture(autouse=True)
def _clean_cache():
    cache.clear()
    yield


@pytest.fixture(autouse=True)
def _audit_digests_of_this_test(settings, tmp_path):
    """Each test publishes audit digests into its own folder: license IDs repeat across runs."""
    settings.AUDIT_DIGEST_DIR = tmp_path / "audit-digests"


@pytest.fixture(autouse=True)
def _fresh_actor():
    """Every test starts as the system actor: a view called without the middleware (which resets the actor
    after each request) must not leave its authenticated caller to the next test's audit entries."""
    token = set_actor(SYSTEM)
    yield
    reset_actor(token)


class Persona:
    def __init__(self, agent, token):
        self.agent = agent
        self.account = agent.account
        self.license = agent.license
        self.token = token
        self.client = api_client(agent.account_id, token)


def api_client(account_id, token) -> APIClient:
    client = APIClient(HTTP_USER_AGENT="helpdesk-tests/1.0")
    credentials = base64.b64encode(f"{account_id}:{token}".encode()).decode()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {credentials}")
    return client


def make_persona(agent) -> Persona:
    _, token = services.token_issue(account=agent.account, name="test")
    return Persona(agent, token)


@pytest.fixture
def license(db):
    return LicenseFactory(company_name="Acme")


@pytest.fixture
def owner(license):
    return make_persona(license.agents.order_by("created_at").first())


@pytest.fixture
def agent(license):
    return make_persona(AgentFactory(license=license, roles=[ROLE_NORMAL]))


@pytest.fixture
def viewer(license):
    return make_persona(AgentFactory(license=license, roles=[ROLE_VIEWER]))


@pytest.fixture
def other_license(db):
    return LicenseFactory(company_name="Other Corp")


@pytest.fixture
def outsider(other_license):
    """The owner of another license: everything of `license` must be a 404 to them."""
    return make_persona(other_license.agents.get())


@pytest.fixture
def personas(owner, agent, viewer):
    return {"owner": owner, "normal": agent, "viewer": viewer}


@pytest.fixture
def eager_tasks():
    """Celery tasks run in the calling thread (the app reads its config once, so set it on the app)."""
    from helpdesk.celery import app

    saved = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager = app.conf.task_eager_propagates = True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = saved


class SmtpSink:
    """An aiosmtpd handler that keeps what it receives; `refuse` lists SMTP replies to give to RCPT first."""

    def __init__(self):
        self.messages = []
        self.raw: list[bytes] = []  # the bytes as received (what a DKIM signature covers)
        self.refuse: list[str] = []

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if self.refuse:
            return self.refuse.pop(0)
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        from email import message_from_bytes, policy

        message = message_from_bytes(envelope.content, policy=policy.default)
        self.raw.append(envelope.original_content or envelope.content)
        self.messages.append((list(envelope.rcpt_tos), message))
        return "250 Message accepted"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def smtp_server(settings):
    """A real SMTP server on a free loopback port, and Django's SMTP backend pointed at it."""
    from aiosmtpd.controller import Controller

    sink = SmtpSink()
    controller = Controller(sink, hostname="127.0.0.1", port=_free_port())
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", controller.port
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = False
    try:
        yield sink
    finally:
        controller.stop()


@pytest.fixture
def dns_server(settings):
    """A real DNS server (UDP and TCP) on a free loopback port that the product's resolver asks
    (tests/dns_helpers.py): `dns_server.publish(name, value)` adds a TXT record."""
    from tests.dns_helpers import DnsServer

    server = DnsServer().start()
    settings.HELPDESK_DNS_RESOLVER = server.address
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def superuser(db):
    """A Django test client signed in to the admin as a superuser."""
    from tests.admin_helpers import superuser_client

    return superuser_client()


@pytest.fixture
def staff_owner(owner):
    """The owner of `license`, given staff access and signed in to the admin (sees only `license`)."""
    from tests.admin_helpers import staff

    return staff(owner.agent)


@pytest.fixture
def redis_proxy(settings, monkeypatch):
    """The cache goes through a cuttable proxy to the real Redis (the settings change rebuilds the cache
    backends), for the outage and rate-limit tests."""
    from urllib.parse import urlsplit

    from helpdesk.logs import OncePer
    from tests.tcp_proxy import TcpProxy

    target = urlsplit(settings.REDIS_URL)
    proxy = TcpProxy(target.hostname, target.port or 6379)
    settings.CACHES = {
        "default": {**settings.CACHES["default"], "LOCATION": proxy.url_for(settings.REDIS_URL)}
    }
    monkeypatch.setattr(OncePer, "last", {})  # the cache's warnings are rate-limited per process
    yield proxy
    proxy.close()
