"""The task queue on Redis (helpdesk.broker_redis) and how a task is published (helpdesk.queue.enqueue_now)."""

import base64
import json

import pytest
import redis
from django.conf import settings as django_settings
from kombu import Connection, Exchange, Producer, Queue

from helpdesk import broker_redis, queue
from helpdesk.celery import app

pytestmark = pytest.mark.skipif(not django_settings.REDIS_URL, reason="the Redis broker: the PostgreSQL pass")


@pytest.fixture
def broker():
    client = redis.Redis.from_url(django_settings.REDIS_URL)
    client.delete("bench-q", "celery")
    yield client
    client.delete("bench-q", "celery")


def test_a_channel_keeps_one_client_until_its_pool_is_replaced(broker):
    with Connection(django_settings.REDIS_URL, transport=broker_redis.Transport) as connection:
        channel = connection.default_channel
        target = Queue("bench-q", Exchange("bench-q"), routing_key="bench-q")
        producer = Producer(channel)
        clients = []
        for number in range(3):
            producer.publish({"n": number}, exchange="", routing_key="bench-q", declare=[target])
            with channel.conn_or_acquire() as client:
                clients.append(client)
        # one client for every command, on the channel's pool
        assert clients[0] is clients[1] is clients[2]
        assert clients[0].connection_pool is channel.pool
        # kombu drops its pools after a connection error: the next command gets a client of the new pool
        channel._disconnect_pools()
        producer.publish({"n": 3}, exchange="", routing_key="bench-q")
        with channel.conn_or_acquire() as client:
            assert client is not clients[0]
            assert client.connection_pool is channel.pool
        # and every message arrived, in order
        messages = [json.loads(raw) for raw in reversed(broker.lrange("bench-q", 0, -1))]
        assert {message["properties"]["body_encoding"] for message in messages} == {"base64"}
        bodies = [json.loads(base64.b64decode(message["body"])) for message in messages]
        assert bodies == [{"n": n} for n in range(4)]
        # a client passed in is used as it is
        with channel.conn_or_acquire(broker) as client:
            assert client is broker


def test_the_app_publishes_through_it_with_the_settings_it_was_given():
    assert django_settings.CELERY_BROKER_TRANSPORT == "helpdesk.broker_redis:Transport"
    # Celery's settings are Django's CELERY_* names, read once
    assert app.conf.broker_transport == django_settings.CELERY_BROKER_TRANSPORT
    assert app.conf.task_acks_late is django_settings.CELERY_TASK_ACKS_LATE is True
    assert app.conf.broker_transport_options == django_settings.CELERY_BROKER_TRANSPORT_OPTIONS
    assert set(app.conf.beat_schedule) == set(django_settings.CELERY_BEAT_SCHEDULE)
    with app.connection_for_write() as connection:
        assert isinstance(connection.transport, broker_redis.Transport)


def test_a_published_task_lands_on_its_queue_with_its_arguments_shown(broker):
    from templates_app.send_relay import SEND_MANY_TASK, SEND_TASK

    assert queue.enqueue_now(SEND_TASK, "3f1c0000-0000-0000-0000-000000000001")
    many = [f"3f1c0000-0000-0000-0000-{n:012d}" for n in range(60)]  # a repr longer than Celery shows
    assert queue.enqueue_now(SEND_MANY_TASK, many)
    first, second = (json.loads(raw) for raw in reversed(broker.lrange("celery", 0, -1)))
    assert first["headers"]["task"] == SEND_TASK
    assert first["headers"]["argsrepr"] == "('3f1c0000-0000-0000-0000-000000000001',)"
    assert first["headers"]["kwargsrepr"] == "{}"
    assert first["properties"]["delivery_info"]["routing_key"] == "celery"
    # Celery's own shortening for a long one
    assert second["headers"]["task"] == SEND_MANY_TASK
    assert len(repr((many,))) > queue.SHOWN_MOST
    assert "..." in second["headers"]["argsrepr"]
    assert len(second["headers"]["argsrepr"]) < len(repr((many,)))
