"""`make run`: the supervisor stops every process on Ctrl-C and exits 0, the demo credentials do not pile up and
are printed as the export lines docs/api.md uses, and bench/dataset.py explains its options."""

from __future__ import annotations

import base64
import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from accounts.models import PersonalAccessToken

ROOT = Path(__file__).resolve().parent.parent


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) is not running
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _start_supervisor(tmp_path, *commands, grace="5"):
    process = subprocess.Popen(
        [sys.executable, "-m", "helpdesk.supervisor", "--grace", grace, *commands],
        cwd=ROOT, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    return process


def _started_pids(process, count: int) -> list[int]:
    pids = []
    while len(pids) < count:
        line = process.stderr.readline()
        assert line, "the supervisor ended before starting its children"
        match = re.search(r"started \(pid (\d+)\)", line)
        if match:
            pids.append(int(match.group(1)))
    return pids


def _wait_for(path: Path, timeout=10.0) -> str:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} was not written"
        time.sleep(0.05)
    return path.read_text().strip()


def test_ctrl_c_stops_every_process_and_its_children_and_exits_0(tmp_path):
    # given a supervisor of a plain process, one with a child of its own (as a worker's pool), and one that
    # ignores SIGTERM (as a stuck process would)
    grandchild = tmp_path / "grandchild.pid"
    stubborn = tmp_path / "stubborn.ready"
    process = _start_supervisor(
        tmp_path,
        "web=sleep 60",
        f"worker=sh -c 'sleep 60 & echo $! > {grandchild}; wait'",
        f'beat={sys.executable} -c "import signal,time,pathlib; signal.signal(signal.SIGTERM, signal.SIG_IGN); '
        f"pathlib.Path('{stubborn}').write_text('1'); time.sleep(60)\"",
        grace="1",
    )
    pids = _started_pids(process, 3)
    pids.append(int(_wait_for(grandchild)))
    _wait_for(stubborn)
    assert all(_alive(pid) for pid in pids)

    # when the user presses Ctrl-C
    process.send_signal(signal.SIGINT)

    # then the supervisor exits 0, having stopped (or killed) every process and the grandchild
    assert process.wait(timeout=15) == 0
    output = process.stderr.read()
    assert (
        "SIGINT: stopping web, worker, beat" in output and "beat did not stop within 1s: killing it" in output
    )
    time.sleep(0.2)
    assert [pid for pid in pids if _alive(pid)] == []


def test_sigterm_is_a_user_stop_too(tmp_path):
    process = _start_supervisor(tmp_path, "web=sleep 60")
    [pid] = _started_pids(process, 1)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=15) == 0
    assert not _alive(pid)


def test_a_process_that_dies_stops_the_others_and_its_status_is_the_exit_status(tmp_path):
    process = _start_supervisor(tmp_path, "web=sleep 60", "worker=sh -c 'sleep 0.5; exit 3'")
    web, _ = _started_pids(process, 2)
    assert process.wait(timeout=15) == 3
    assert "worker exited with status 3" in process.stderr.read()
    assert not _alive(web)


def test_make_run_uses_the_supervisor_for_every_process():
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nrun: venv\n", 1)[1].split("\n\n", 1)[0]
    assert "helpdesk.supervisor" in recipe and '"web=' in recipe and '"worker=' in recipe
    assert "kill 0" not in recipe  # what killed make itself ("make: *** Terminated")


# --- demo credentials --------------------------------------------------------------------------------------------


def _demo() -> dict:
    out = io.StringIO()
    call_command("demo_license", base_url="http://127.0.0.1:8123", stdout=out)
    text = out.getvalue()
    line = re.search(r"^export HD=(\S+) ACCOUNT_ID=(\S+) TOKEN=(\S+)$", text, re.M)
    assert line, text
    assert 'export AUTH="$ACCOUNT_ID:$TOKEN"' in text
    return {"text": text, "hd": line.group(1), "account": line.group(2), "token": line.group(3)}


def _licenses_status(credentials: dict) -> int:
    basic = base64.b64encode(f"{credentials['account']}:{credentials['token']}".encode()).decode()
    client = Client(HTTP_AUTHORIZATION=f"Basic {basic}", HTTP_USER_AGENT="demo-test/1.0")
    return client.get("/v1/licenses").status_code


@pytest.mark.django_db
def test_rerunning_the_demo_revokes_the_previous_token_and_prints_export_lines():
    # given the demo set up once, and its printed credentials working
    first = _demo()
    assert first["hd"] == "http://127.0.0.1:8123" and "This token is shown once" in first["text"]
    assert _licenses_status(first) == 200

    # when make run runs again
    second = _demo()

    # then there is still one live demo token: the new one, and the output says the old one was revoked
    assert "The previous demo token was revoked" in second["text"]
    assert second["account"] == first["account"] and second["token"] != first["token"]
    assert PersonalAccessToken.objects.filter(name="demo", revoked_at__isnull=True).count() == 1
    assert _licenses_status(second) == 200
    assert _licenses_status(first) == 401


def test_docs_api_md_uses_the_printed_variables():
    docs = (ROOT / "docs" / "api.md").read_text()
    credentials = docs.split("## Credentials", 1)[1].split("\n## ", 1)[0]
    assert "export HD=http://127.0.0.1:8000 ACCOUNT_ID=" in credentials and "TOKEN=" in credentials
    assert 'export AUTH="$ACCOUNT_ID:$TOKEN"' in credentials


# --- bench/dataset.py --------------------------------------------------------------------------------------------


def test_bench_dataset_help_explains_every_option_and_its_default():
    from bench.dataset import build_parser

    parser = build_parser()
    own = [a for a in parser._actions if a.dest in {"tickets", "licenses", "seed", "credentials", "truncate"}]
    assert len(own) == 5
    text = parser.format_help()
    for action in own:
        assert action.help, action.dest
        assert "default:" in action.help
    for default in ("1000000", "50", "42", "bench/credentials.json"):
        assert f"(default: {default})" in " ".join(text.split())


def test_bench_dataset_output_names_each_license_size_once():
    from bench.dataset import _sizes_summary, progress

    assert _sizes_summary([90, 210]) == "[90, 210]"  # was "[90, 210]... [90, 210]"
    assert _sizes_summary(list(range(10, 0, -1))) == "[10, 9, 8, 7, 6] ... [3, 2, 1]"
    # piped into a file, no progress bars (each would print at its start and twice at its end)
    out = io.StringIO()
    assert list(progress(range(3), desc="licenses", file=out)) == [0, 1, 2]
    assert out.getvalue() == ""


@pytest.mark.django_db
def test_the_onboarding_of_docs_api_md_works_for_a_brand_new_account():
    # given an account made by issue_token --create, with the export lines it prints
    out = io.StringIO()
    call_command("issue_token", "--email", "new@example.com", "--create", stdout=out)
    line = re.search(r"^export ACCOUNT_ID=(\S+) TOKEN=(\S+)$", out.getvalue(), re.M)
    assert line and 'export AUTH="$ACCOUNT_ID:$TOKEN"' in out.getvalue()
    basic = base64.b64encode(f"{line.group(1)}:{line.group(2)}".encode()).decode()
    client = Client(HTTP_AUTHORIZATION=f"Basic {basic}", HTTP_USER_AGENT="curl/8.0")

    # when it follows the onboarding section: no license, create one, find its ID, ask for forwarding setup
    assert client.get("/v1/licenses").json() == []
    body = {"planCode": "hd-team1m", "couponCode": "WELCOME", "source": {"utmSource": "newsletter"}}
    created = client.post("/v1/licenses", body, content_type="application/json")
    assert created.status_code == 201, created.content
    license_id = client.get("/v1/licenses").json()[0]["ID"]
    assert license_id == created.json()["ID"]
    sent = client.post(
        f"/v1/licenses/{license_id}/forwardingInstructions", {"email": "it@example.com"},
        content_type="application/json",
    )  # fmt: skip
    assert sent.json() == "Forwarding instructions sent to it@example.com."
    assert (
        client.post("/v1/licenses", body, content_type="application/json").json()["code"] == "license_exists"
    )
