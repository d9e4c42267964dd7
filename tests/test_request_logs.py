"""Logs operators can search: one JSON line per request with its request ID, the ID in every line, in the
response and in a 5xx body; Celery tasks log the ID of the request that enqueued them."""

import io
import json
import logging
import logging.config
import uuid

import pytest
from celery import signals
from django.conf import settings as django_settings

from helpdesk.celery import LOG_CONTEXT_HEADER, app
from helpdesk.logs import logging_config, logging_context


def _configure(log_format):
    """Logging configured as with LOG_FORMAT=...; the console handler writes into a buffer the test reads."""
    buffer = io.StringIO()
    config = logging_config(log_format, "INFO")
    config["handlers"]["console"]["stream"] = buffer
    logging.config.dictConfig(config)

    def lines():
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text.splitlines()

    return lines


@pytest.fixture
def json_logs():
    lines = _configure("json")
    yield lambda: [json.loads(line) for line in lines()]
    logging.config.dictConfig(django_settings.LOGGING)


@pytest.fixture
def plain_logs():
    yield _configure(django_settings.LOG_FORMAT)
    logging.config.dictConfig(django_settings.LOGGING)


def _access(lines):
    return [line for line in lines if line["logger"] == "helpdesk.request"]


def test_one_json_line_per_request_with_its_fields(owner, json_logs):
    response = owner.client.get(f"/v1/agents/{owner.agent.id}")
    assert response.status_code == 200
    lines = json_logs()
    [line] = _access(lines)
    assert line["requestID"] == response["X-Request-ID"]
    assert line["license"] == owner.license.id
    assert line["account"] == str(owner.account.id)
    assert line["method"] == "GET"
    assert line["route"] == "/v1/agents/{agentID}"  # the pattern: no IDs in the route
    assert line["status"] == 200
    assert isinstance(line["durationMs"], float) and line["durationMs"] >= 0
    assert line["queries"] >= 1
    assert line["time"].endswith("+00:00")
    assert all(entry["requestID"] == response["X-Request-ID"] for entry in lines)


def test_plain_text_is_the_default_and_carries_the_request_id(owner, plain_logs):
    assert django_settings.LOG_FORMAT == "plain"
    response = owner.client.get("/v1/agents", HTTP_X_REQUEST_ID="plain-1")
    [line] = [line for line in plain_logs() if "helpdesk.request" in line]
    assert "[plain-1]" in line and "GET /v1/agents 200" in line
    assert response["X-Request-ID"] == "plain-1"


def test_the_request_id_is_taken_from_the_request_and_returned(owner):
    response = owner.client.get("/v1/agents", HTTP_X_REQUEST_ID="lb-7f3a:42")
    assert response["X-Request-ID"] == "lb-7f3a:42"


@pytest.mark.parametrize("bad", ["x" * 201, "tab\there", "caf\u00e9", ""])
def test_an_unusable_request_id_is_replaced(owner, bad):
    response = owner.client.get("/v1/agents", HTTP_X_REQUEST_ID=bad)
    assert response.status_code == 200
    assert response["X-Request-ID"] != bad
    assert uuid.UUID(response["X-Request-ID"])


def test_a_request_without_one_gets_a_generated_id(client, db):
    first = client.get("/v1/agents", HTTP_USER_AGENT="t")
    second = client.get("/v1/agents", HTTP_USER_AGENT="t")
    assert first.status_code == 401
    assert uuid.UUID(first["X-Request-ID"]) != uuid.UUID(second["X-Request-ID"])


def test_a_5xx_body_names_the_request_id(owner, monkeypatch, json_logs):
    from accounts.api import views

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(views.AgentViewSet, "list", broken)
    response = owner.client.get("/v1/agents", HTTP_X_REQUEST_ID="req-500")
    assert response.status_code == 500
    assert response.json() == {
        "error": "Internal server error.",
        "code": "server_error",
        "details": {"requestID": "req-500"},
    }
    lines = json_logs()
    [access] = _access(lines)
    assert access["status"] == 500 and access["requestID"] == "req-500"
    # The traceback is logged once, with the same request ID.
    [trace] = [line for line in lines if "exception" in line]
    assert trace["requestID"] == "req-500" and "RuntimeError: boom" in trace["exception"]


@pytest.mark.parametrize("path", ["/v1/agents/00000000-0000-0000-0000-000000000000", "/v1/nowhere"])
def test_a_4xx_is_one_line(owner, json_logs, path):
    response = owner.client.get(path)
    assert response.status_code == 404
    lines = json_logs()
    assert len(lines) == 1, lines  # not also Django's "Not Found: ..." warning
    assert lines[0]["status"] == 404 and lines[0]["level"] == "WARNING"


def test_a_4xx_before_authentication_is_one_line(client, db, json_logs):
    response = client.get("/v1/agents", HTTP_USER_AGENT="t")
    assert response.status_code == 401
    [line] = json_logs()
    assert line["status"] == 401 and line["license"] is None and line["account"] is None


@app.task(name="tests.test_request_logs.say_hello")
def say_hello():
    logging.getLogger("tests.hello").info("hello from a task")


def test_a_task_run_eagerly_logs_the_request_id(eager_tasks, json_logs):
    with logging_context(requestID="req-task", license=7, account="acc"):
        say_hello.delay()
    [hello] = [line for line in json_logs() if line["logger"] == "tests.hello"]
    assert (hello["requestID"], hello["license"], hello["account"]) == ("req-task", 7, "acc")
    assert hello["task"] == "tests.test_request_logs.say_hello"


def test_a_task_carries_the_request_id_in_its_message_headers(json_logs):
    headers = {}
    with logging_context(requestID="req-queued", license=3, account="a-1"):
        signals.before_task_publish.send(sender=say_hello.name, body=None, headers=headers)
    assert headers[LOG_CONTEXT_HEADER]["requestID"] == "req-queued"
    say_hello.apply(headers=headers)  # as a worker runs it: no request context of its own
    lines = json_logs()
    [hello] = [line for line in lines if line["logger"] == "tests.hello"]
    assert (hello["requestID"], hello["license"]) == ("req-queued", 3)
    [done] = [line for line in lines if line["logger"] == "helpdesk.task"]
    assert done["state"] == "SUCCESS" and done["requestID"] == "req-queued" and done["durationMs"] >= 0
