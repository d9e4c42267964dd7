"""Outages of Redis and PostgreSQL, made real: the app talks to them through a TCP proxy the test cuts.

Redis holds only caches and the task queue, so while it is away the API keeps answering (totals computed,
the authentication throttle open) and nothing it said is stale once Redis returns. PostgreSQL holds the
data, so while it is away the API answers a fast 503 with Retry-After, and the first request after it
returns succeeds even on a worker whose pooled connection died meanwhile.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest
from django.conf import settings as django_settings
from django.core.wsgi import get_wsgi_application
from django.db import connections

from helpdesk.queue import enqueue_now, enqueue_on_commit
from tests.conftest import api_client
from tests.tcp_proxy import TcpProxy

TICKET = {
    "subject": "Order 1234 has not arrived",
    "requester": {"email": "jane@example.com", "name": "Jane Doe"},
    "message": {"text": "Hello, my parcel has not arrived yet."},
}


def _total(persona) -> int:
    response = persona.client.get("/v1/tickets")
    assert response.status_code == 200, response.content
    return int(response["X-Total-Results"])


@pytest.mark.redis
def test_while_redis_is_away_the_api_answers_and_after_it_returns_no_total_is_stale(
    owner, redis_proxy, caplog
):
    # given: a total cached while Redis is up
    assert owner.client.post("/v1/tickets", TICKET, format="json").status_code == 201
    assert _total(owner) == 1
    # when: Redis goes away, a ticket is created and the tickets are searched
    redis_proxy.cut()
    with caplog.at_level(logging.WARNING, logger="helpdesk.cache"):
        started = time.monotonic()
        created = owner.client.post("/v1/tickets", TICKET, format="json")
        during = _total(owner)
        elapsed = time.monotonic() - started
    # then: the write is answered as saved (a retry would duplicate it), the total is counted
    assert created.status_code == 201, created.content
    assert during == 2
    assert elapsed < 2
    assert any(record.name == "helpdesk.cache" for record in caplog.records)  # django-redis's ignored error
    # when: Redis returns, holding the total cached before the outage
    redis_proxy.restore()
    # then: that total is not served; the one written during the outage counts
    assert _total(owner) == 2
    assert _total(owner) == 2  # and now from the cache
    assert owner.client.post("/v1/tickets", TICKET, format="json").status_code == 201
    assert _total(owner) == 3


@pytest.mark.redis
def test_while_redis_is_away_a_wrong_token_is_refused_and_the_throttle_fails_open(
    owner, redis_proxy, settings, caplog
):
    # given
    settings.HELPDESK_AUTH_FAILURES_PER_MINUTE = 2
    wrong = api_client(owner.account.pk, "hdp_not-the-token")
    redis_proxy.cut()
    # when
    with caplog.at_level(logging.WARNING, logger="helpdesk.cache"):
        statuses = [wrong.get("/v1/tickets").status_code for _ in range(4)]
    # then: refused, not a 500; the throttle cannot count, so it lets attempts through (and says so)
    assert statuses == [401, 401, 401, 401]
    assert any(record.name == "helpdesk.cache" for record in caplog.records)
    assert owner.client.get("/v1/tickets").status_code == 200
    # when: Redis returns, the throttle counts again
    redis_proxy.restore()
    statuses = [wrong.get("/v1/tickets").status_code for _ in range(3)]
    assert statuses == [401, 401, 429]


@pytest.mark.redis
def test_a_task_enqueued_after_commit_while_the_broker_is_away_does_not_fail_the_request(
    db, django_capture_on_commit_callbacks, caplog
):
    """The real broker settings (timeouts, publish retry policy) against a cut Redis: bounded, no exception."""
    from celery import Celery

    target = urlsplit(django_settings.REDIS_URL)
    proxy = TcpProxy(target.hostname, target.port or 6379)
    # not the current app, and its task not shared: the project's tasks must keep the project's app afterwards
    app = Celery("outage-test", set_as_current=False)
    app.config_from_object("django.conf:settings", namespace="CELERY")
    app.conf.broker_url = proxy.url_for(django_settings.REDIS_URL)
    app.conf.task_always_eager = False
    sent = []

    @app.task(name="tests.outage_probe", shared=False)
    def probe(value):
        sent.append(value)

    try:
        proxy.cut()
        with caplog.at_level(logging.WARNING, logger="helpdesk.queue"):
            started = time.monotonic()
            with django_capture_on_commit_callbacks(execute=True):
                enqueue_on_commit(probe, 1)
            elapsed = time.monotonic() - started
        assert elapsed < 3
        assert any("Could not enqueue tests.outage_probe" in r.getMessage() for r in caplog.records)
        # once the broker is back, publishing works again (what the sweepers rely on)
        proxy.restore()
        assert enqueue_now(probe, 2) is True
    finally:
        proxy.close()
        app.close()


# --- PostgreSQL ----------------------------------------------------------------------------------------------


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


class OneWorker:
    """A WSGI server with one long-lived worker thread, like a gunicorn sync worker: its database connection
    is pooled across requests (CONN_MAX_AGE), which is what a PostgreSQL outage leaves dead."""

    def __init__(self):
        self.server = make_server(
            "127.0.0.1", 0, get_wsgi_application(), server_class=WSGIServer, handler_class=_QuietHandler
        )
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        try:
            self.server.serve_forever(poll_interval=0.05)
        finally:
            connections.close_all()

    def request(self, persona, method="GET", path="/v1/tickets", body=None):
        credentials = base64.b64encode(f"{persona.account.pk}:{persona.token}".encode()).decode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.server.server_port}{path}",
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={
                "Authorization": f"Basic {credentials}",
                "User-Agent": "helpdesk-tests/1.0",
                "Content-Type": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, dict(response.headers), json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), json.loads(error.read() or b"null")

    def stop(self):
        self.server.shutdown()
        self.thread.join(10)
        self.server.server_close()


@pytest.fixture
def postgres_proxy(transactional_db):
    """New database connections (the server thread's) go through a proxy to the real PostgreSQL."""
    settings_dict = connections["default"].settings_dict
    proxy = TcpProxy(settings_dict["HOST"] or "127.0.0.1", int(settings_dict["PORT"] or 5432))
    saved = settings_dict["HOST"], settings_dict["PORT"]
    settings_dict["HOST"], settings_dict["PORT"] = "127.0.0.1", str(proxy.port)
    yield proxy
    settings_dict["HOST"], settings_dict["PORT"] = saved
    proxy.close()


@pytest.fixture
def worker(postgres_proxy):
    server = OneWorker()
    yield server
    server.stop()


@pytest.mark.postgres
def test_while_postgresql_is_away_the_api_answers_a_fast_503_and_recovers(owner, postgres_proxy, worker):
    # given: the worker has a pooled connection
    assert worker.request(owner)[0] == 200
    # when: PostgreSQL goes away
    postgres_proxy.cut()
    started = time.monotonic()
    status, headers, body = worker.request(owner)
    elapsed = time.monotonic() - started
    write_status, _, write_body = worker.request(owner, "POST", body=TICKET)
    # then: a 503 in the error shape, with Retry-After, at once
    assert status == 503, body
    # (a 5xx names its request ID, as the response header does: what an operator greps the logs for)
    details = {"requestID": headers["X-Request-ID"]}
    assert body == {"error": body["error"], "code": "database_unavailable", "details": details}
    assert int(headers["Retry-After"]) > 0
    assert elapsed < 3
    assert write_status == 503 and write_body["code"] == "database_unavailable"
    # when it returns: the first request succeeds
    postgres_proxy.restore()
    assert worker.request(owner)[0] == 200


@pytest.mark.postgres
def test_the_first_request_after_postgresql_returns_succeeds_on_a_worker_idle_during_the_outage(
    owner, postgres_proxy, worker
):
    # given: the worker has a pooled connection, then PostgreSQL goes away and comes back while it is idle
    assert worker.request(owner)[0] == 200
    postgres_proxy.cut()
    postgres_proxy.restore()
    # when / then: its pooled connection is dead; the health check replaces it instead of failing a request
    status, _, body = worker.request(owner, "POST", body=TICKET)
    assert status == 201, body
    assert worker.request(owner)[0] == 200


@pytest.mark.postgres
def test_the_admin_shows_a_plain_503_page_while_postgresql_is_away(superuser, postgres_proxy, worker):
    session = superuser.cookies[django_settings.SESSION_COOKIE_NAME].value
    postgres_proxy.cut()
    request = urllib.request.Request(
        f"http://127.0.0.1:{worker.server.server_port}/admin/",
        headers={"User-Agent": "browser", "Cookie": f"{django_settings.SESSION_COOKIE_NAME}={session}"},
    )
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request, timeout=30)
    assert raised.value.code == 503
    assert raised.value.headers["Retry-After"]
    page = raised.value.read().decode()
    assert "database is unavailable" in page and "Traceback" not in page


@pytest.mark.postgres
def test_a_statement_over_the_statement_timeout_answers_a_fast_503(
    owner, postgres_proxy, worker, monkeypatch
):
    from tickets.api.views import TicketViewSet

    # given the server cancels statements after 200 ms (DB_STATEMENT_TIMEOUT_MS) and a search that runs 5 s
    options = connections["default"].settings_dict["OPTIONS"]
    monkeypatch.setitem(options, "options", "-c statement_timeout=200")
    original = TicketViewSet.list

    def slow_list(self, request, *args, **kwargs):
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT pg_sleep(5)")
        return original(self, request, *args, **kwargs)

    monkeypatch.setattr(TicketViewSet, "list", slow_list)
    # when it is requested
    started = time.monotonic()
    status, headers, body = worker.request(owner)
    # then the answer is the 503 of the contract, in well under the statement's 5 s
    assert time.monotonic() - started < 2
    assert status == 503, body
    assert body == {
        "error": body["error"],
        "code": "database_unavailable",
        "details": {"requestID": headers["X-Request-ID"]},
    }
    assert int(headers["Retry-After"]) > 0


@pytest.mark.postgres
def test_the_first_mail_after_postgresql_returns_is_stored_by_a_listener_idle_during_the_outage(
    owner, postgres_proxy, tmp_path, settings
):
    """The SMTP listener's threads keep their connections across mails and run no health check before each
    (templates_app.inbound.smtp._in_thread): a connection a restart left dead is found by the mail's own first
    statement, replaced, and the mail runs once more: 250, stored once, no 451."""
    import smtplib
    import socket

    from templates_app.addresses import license_address
    from templates_app.inbound.smtp import make_controller
    from templates_app.models import InboundMessage
    from tests.factories import LicenseFactory
    from tests.mail_helpers import simple
    from tickets.models import Ticket

    settings.MEDIA_ROOT = str(tmp_path)
    license = (
        LicenseFactory()
    )  # on this test's connection, opened before the proxy (`owner`): only the listener's
    # goes through it
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    controller = make_controller(
        host="127.0.0.1", port=port, lmtp=False, workers=1
    )  # one thread: one connection
    controller.start()
    try:
        # given: the listener's thread holds a connection (a first mail), then PostgreSQL restarts while it idles
        with smtplib.SMTP("127.0.0.1", port) as client:
            client.sendmail("a@example.com", [license_address(license.pk)], simple(sender="a@example.com"))
        postgres_proxy.cut()
        postgres_proxy.restore()
        # when the next mail comes (its recipient checked from the process's copy, its mail on the dead connection)
        raw = simple(sender="b@example.com", headers={"Message-ID": "<after-restart@client.example>"})
        with smtplib.SMTP("127.0.0.1", port) as client:
            refused = client.sendmail("b@example.com", [license_address(license.pk)], raw)
        # then it is accepted and stored once
        assert refused == {}
        assert InboundMessage.objects.filter(message_id="<after-restart@client.example>").count() == 1
        assert Ticket.objects.filter(license=license).count() == 2
    finally:
        controller.stop()
