"""The embedded default's file-system queue never hands a worker a message that is still being written."""

import os
from queue import Empty

import pytest
from kombu import Connection

from helpdesk import broker_files


def test_a_message_is_invisible_to_workers_until_it_is_written_whole(tmp_path, monkeypatch):
    # given the embedded default's transport on a folder
    options = {"data_folder_in": str(tmp_path), "data_folder_out": str(tmp_path)}
    with Connection(
        "filesystem://", transport=broker_files.Transport, transport_options=options
    ) as connection:
        channel = connection.default_channel
        seen_while_writing = []
        real_replace = os.replace

        def replace(source, target):
            # when a worker polls the folder while the message is being written
            try:
                seen_while_writing.append(channel._get("celery"))
            except Empty:
                seen_while_writing.append(None)
            return real_replace(source, target)

        monkeypatch.setattr(broker_files.os, "replace", replace)
        channel._put("celery", {"body": "hello"})
        # then it found nothing, and afterwards it gets the whole message
        assert seen_while_writing == [None]
        assert channel._get("celery") == {"body": "hello"}
        assert os.listdir(tmp_path) == []


def test_the_embedded_default_uses_it(settings):
    if settings.REDIS_URL:
        pytest.skip("the embedded default's queue: runs in the SQLite pass")
    assert settings.CELERY_BROKER_TRANSPORT == "helpdesk.broker_files:Transport"
    from helpdesk.celery import app

    with app.connection_for_write() as connection:
        assert isinstance(connection.transport, broker_files.Transport)
