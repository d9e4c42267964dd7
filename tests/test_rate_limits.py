"""Rate limits per token and per license: X-RateLimit-* on every authenticated response, 429 past a limit."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

import pytest
import time_machine

from accounts.models import ROLE_NORMAL
from tests.conftest import make_persona
from tests.factories import AgentFactory

# The start of a window of 60 s (and of 10 s): tests that count run inside one window.
WINDOW_START = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)


@pytest.fixture
def limits(settings):
    settings.RATE_LIMIT_PER_TOKEN = 3
    settings.RATE_LIMIT_PER_LICENSE = 5
    settings.RATE_LIMIT_WINDOW_SECONDS = 60
    return settings


@pytest.fixture
def frozen():
    with time_machine.travel(WINDOW_START, tick=False) as traveller:
        yield traveller


def _headers(response) -> tuple[int, int, int]:
    return (
        int(response["X-RateLimit-Limit"]),
        int(response["X-RateLimit-Remaining"]),
        int(response["X-RateLimit-Reset"]),
    )


def test_every_response_carries_the_limit_and_the_remaining_requests_decrease(owner, limits, frozen):
    reset = int(WINDOW_START.timestamp()) + 60
    # when
    responses = [owner.client.get("/v1/tickets") for _ in range(3)]
    # then: the token's bucket is the tighter one (3 < 5)
    assert [r.status_code for r in responses] == [200, 200, 200]
    assert [_headers(r) for r in responses] == [(3, 2, reset), (3, 1, reset), (3, 0, reset)]


def test_an_error_response_carries_the_headers_too(owner, limits, frozen):
    missing = owner.client.get("/v1/tickets/no-such-ticket")
    assert missing.status_code == 404
    assert _headers(missing)[:2] == (3, 2)


def test_a_request_refused_by_a_permission_check_counts_and_says_so(viewer, limits, frozen):
    forbidden = viewer.client.post("/v1/tickets", {}, format="json")
    assert forbidden.status_code == 403
    assert _headers(forbidden)[:2] == (3, 2)


def test_past_the_token_limit_the_answer_is_429_with_retry_after_in_the_error_shape(owner, limits, frozen):
    # given
    for _ in range(3):
        assert owner.client.get("/v1/tickets").status_code == 200
    frozen.shift(15)
    # when
    refused = owner.client.get("/v1/tickets")
    # then
    assert refused.status_code == 429
    assert refused["Retry-After"] == "45"
    assert _headers(refused) == (3, 0, int(WINDOW_START.timestamp()) + 60)
    body = refused.json()
    assert body["code"] == "rate_limit_exceeded"
    assert body["details"] is None
    assert "45 seconds" in body["error"]


def test_past_the_limit_a_request_the_permissions_refuse_is_a_429_too(viewer, limits, frozen):
    for _ in range(3):
        assert viewer.client.get("/v1/tickets").status_code == 200
    refused = viewer.client.post("/v1/tickets", {}, format="json")
    assert refused.status_code == 429
    assert refused.json()["code"] == "rate_limit_exceeded"


def test_the_license_bucket_is_shared_by_its_tokens_and_not_by_another_license(
    owner, agent, outsider, limits, frozen
):
    # given: two tokens of one license, 3 + 2 requests (the license's 5)
    assert [owner.client.get("/v1/tickets").status_code for _ in range(3)] == [200] * 3
    last = [agent.client.get("/v1/tickets") for _ in range(2)]
    assert [r.status_code for r in last] == [200, 200]
    # the agent's token has 1 left, its license none: the license's bucket is reported
    assert _headers(last[-1])[:2] == (5, 0)
    # when: a third token of the license, unused so far
    third = make_persona(AgentFactory(license=owner.license, roles=[ROLE_NORMAL]))
    refused = third.client.get("/v1/tickets")
    # then: the license is over its limit
    assert refused.status_code == 429
    assert refused.json()["code"] == "rate_limit_exceeded"
    # and another license has its own bucket
    other = outsider.client.get("/v1/tickets")
    assert other.status_code == 200
    assert _headers(other)[:2] == (3, 2)


def test_a_new_window_resets_the_counters(owner, limits, frozen):
    for _ in range(3):
        owner.client.get("/v1/tickets")
    assert owner.client.get("/v1/tickets").status_code == 429
    # when: the window ends
    frozen.move_to(datetime.fromtimestamp(WINDOW_START.timestamp() + 60, UTC))
    # then
    again = owner.client.get("/v1/tickets")
    assert again.status_code == 200
    assert _headers(again) == (3, 2, int(WINDOW_START.timestamp()) + 120)


def test_the_window_length_is_configurable(owner, limits, frozen):
    limits.RATE_LIMIT_WINDOW_SECONDS = 10
    for _ in range(3):
        owner.client.get("/v1/tickets")
    refused = owner.client.get("/v1/tickets")
    assert refused.status_code == 429
    assert refused["Retry-After"] == "10"
    frozen.shift(10)
    assert owner.client.get("/v1/tickets").status_code == 200


def test_zero_disables_a_limit(owner, limits, frozen):
    # the token's limit off: the license's is reported and applies
    limits.RATE_LIMIT_PER_TOKEN = 0
    responses = [owner.client.get("/v1/tickets") for _ in range(6)]
    assert [r.status_code for r in responses] == [200] * 5 + [429]
    assert _headers(responses[0])[:2] == (5, 4)
    # both off: no limit, no headers
    limits.RATE_LIMIT_PER_LICENSE = 0
    responses = [owner.client.get("/v1/tickets") for _ in range(10)]
    assert [r.status_code for r in responses] == [200] * 10
    assert "X-RateLimit-Limit" not in responses[-1]


def test_an_anonymous_request_is_not_counted(owner, limits, client):
    response = client.get("/v1/tickets", HTTP_USER_AGENT="helpdesk-tests/1.0")
    assert response.status_code == 401
    assert "X-RateLimit-Limit" not in response


@pytest.mark.redis
def test_while_redis_is_away_the_limits_fail_open_with_a_warning(owner, limits, frozen, redis_proxy, caplog):
    # given: the token's limit reached while Redis is up
    for _ in range(3):
        assert owner.client.get("/v1/tickets").status_code == 200
    assert owner.client.get("/v1/tickets").status_code == 429
    # when: Redis goes away
    redis_proxy.cut()
    with caplog.at_level(logging.WARNING, logger="helpdesk.cache"):
        started = time.monotonic()
        responses = [owner.client.get("/v1/tickets") for _ in range(3)]
        elapsed = time.monotonic() - started
    # then: answered (nothing can count them), the limit still announced, a warning logged
    assert [r.status_code for r in responses] == [200, 200, 200]
    assert responses[0]["X-RateLimit-Limit"] == "3"
    assert "X-RateLimit-Remaining" not in responses[0]
    assert elapsed < 5
    assert any("throttles fail open" in record.getMessage() for record in caplog.records)
    # when: Redis returns, the counters (still in it) apply again
    redis_proxy.restore()
    assert owner.client.get("/v1/tickets").status_code == 429


@pytest.mark.redis
def test_on_redis_counting_both_buckets_costs_one_round_trip(owner, limits, frozen, monkeypatch):
    from redis.connection import Connection

    sent = []
    send = Connection.send_packed_command
    monkeypatch.setattr(
        Connection, "send_packed_command", lambda self, *a, **kw: sent.append(1) or send(self, *a, **kw)
    )

    def round_trips() -> int:
        sent.clear()
        assert owner.client.get("/v1/tickets").status_code == 200
        return len(sent)

    limits.RATE_LIMIT_PER_TOKEN = limits.RATE_LIMIT_PER_LICENSE = 0
    round_trips()  # the search's total is cached
    round_trips()  # and the caller (accounts.api.callers: kept from the second request on)
    without = round_trips()
    limits.RATE_LIMIT_PER_TOKEN, limits.RATE_LIMIT_PER_LICENSE = 3, 5
    # The count rides in the round trip that reads the caller's versions: no round trip of its own.
    assert round_trips() == without
    assert owner.client.get("/v1/tickets")["X-RateLimit-Remaining"] == "1"
