"""Beat (RedBeat with REDIS_URL set) survives a Redis outage and keeps firing the schedule afterwards."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from django.conf import settings

from tests.tcp_proxy import TcpProxy

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.redis


def _wait_for_line(path: Path, pattern: str, start: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text()
        if re.search(pattern, text[start:]):
            return len(text)
        time.sleep(0.2)
    raise AssertionError(f"no {pattern!r} in beat's log within {timeout}s:\n{path.read_text()[-3000:]}")


def test_beat_survives_a_redis_cut_and_holds_its_lock_again_after_it(tmp_path):
    from urllib.parse import urlsplit

    # given beat running against Redis through a proxy that can be cut
    target = urlsplit(settings.REDIS_URL)
    proxy = TcpProxy(target.hostname, target.port or 6379)
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env.update(REDIS_URL=proxy.url_for(settings.REDIS_URL), HELPDESK_VAR_DIR=str(tmp_path))
    log = tmp_path / "beat.log"
    with log.open("w") as out:
        beat = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "helpdesk", "beat", "--loglevel=INFO"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    client = redis.Redis.from_url(settings.REDIS_URL)
    lock = "helpdesk:redbeat:lock"
    try:
        _wait_for_line(log, r"beat: Acquired lock", 0, 30)
        # when Redis is cut for 8 seconds (the lock, 30 s, ages meanwhile)
        proxy.cut()
        time.sleep(8)
        assert client.ttl(lock) <= 22
        assert beat.poll() is None, log.read_text()[-3000:]
        proxy.restore()
        # then beat is still running, and renews its lock within a tick (5 s) of Redis' return
        deadline = time.monotonic() + 10
        while client.ttl(lock) <= 25:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        assert beat.poll() is None
        assert "Redis is unreachable" in log.read_text()
    finally:
        beat.terminate()
        try:
            beat.wait(timeout=10)
        except subprocess.TimeoutExpired:
            beat.kill()
            beat.wait()
        proxy.close()
        for key in client.scan_iter("helpdesk:redbeat*"):  # the schedule RedBeat kept in this test's Redis
            client.delete(key)
