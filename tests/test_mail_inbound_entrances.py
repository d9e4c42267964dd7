"""Mail in, the entrances: `manage.py receive_mail` (stdin, the MTA pipe exit codes), a real SMTP/LMTP listener
(aiosmtpd, on a free loopback port) receiving mail sent with smtplib, and the admin's raw message view."""

import io
import os
import signal
import smtplib
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.db import OperationalError, connection

from templates_app import send_relay, tasks
from templates_app.addresses import license_address
from templates_app.inbound import services as inbound_services
from templates_app.inbound.smtp import make_controller
from templates_app.models import BlockedSender, InboundMessage, OutboundMessage
from tests.factories import LicenseFactory
from tests.mail_helpers import load, simple
from tickets.models import Message, Ticket

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path


# --- receive_mail -------------------------------------------------------------------------------------------


def run_receive_mail(raw: bytes, *args, env: dict | None = None) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        with pytest.raises(SystemExit) as exit_info:
            call_command("receive_mail", *args, stdin=io.BytesIO(raw), stdout=out, stderr=err)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return exit_info.value.code, out.getvalue() + err.getvalue()


def test_receive_mail_stores_and_exits_0(license):
    code, output = run_receive_mail(simple(subject="Printer"), "--recipient", license_address(license.pk))
    assert code == 0 and output.startswith("stored ticket")
    assert Ticket.objects.get(license=license).subject == "Printer"


def test_receive_mail_exits_0_for_a_duplicate(license):
    raw = simple(headers={"Message-ID": "<twice@client.example>"})
    assert run_receive_mail(raw, "--recipient", license_address(license.pk))[0] == 0
    code, output = run_receive_mail(raw, "--recipient", license_address(license.pk))
    assert code == 0 and output.startswith("duplicate")
    assert Ticket.objects.count() == 1


def test_receive_mail_takes_the_recipient_from_the_environment_then_the_headers(license):
    env = {"ORIGINAL_RECIPIENT": license_address(license.pk)}
    assert run_receive_mail(simple(), env=env)[0] == 0
    raw = simple(to=f"Support <{license_address(license.pk)}>")
    assert run_receive_mail(raw)[0] == 0
    assert Ticket.objects.filter(license=license).count() == 2


def test_receive_mail_exits_67_for_an_unknown_recipient(db):
    code, output = run_receive_mail(simple(), "--recipient", license_address(424242))
    assert code == 67 and "No such recipient" in output
    assert not InboundMessage.objects.exists()


def test_receive_mail_exits_65_for_a_message_too_large(license, settings):
    settings.INBOUND_MAX_MESSAGE_BYTES = 2000
    code, output = run_receive_mail(simple(body="x" * 5000), "--recipient", license_address(license.pk))
    assert code == 65 and "too large" in output
    assert not Ticket.objects.exists()


def test_receive_mail_help_lists_every_exit_status():
    from templates_app.management.commands.receive_mail import Command

    assert all(f"{code} " in Command.help for code in (0, 65, 67, 75))


def test_receive_mail_exits_75_on_database_trouble_and_stores_nothing(license, monkeypatch):
    def lost(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(inbound_services, "_mark_inbox_used", lost)  # fails after the ticket was written
    code, output = run_receive_mail(simple(), "--recipient", license_address(license.pk))
    assert code == 75 and "retry" in output
    assert not Ticket.objects.exists() and not InboundMessage.objects.exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_receive_mail_as_an_mta_runs_it(license, tmp_path):
    """The real command in its own process, as Postfix's pipe(8) runs it: message on stdin, exit status."""
    db = django_settings.DATABASES["default"]
    url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    env = {**os.environ, "DATABASE_URL": url, "MEDIA_ROOT": str(tmp_path)}

    def pipe(raw, recipient):
        command = [sys.executable, "manage.py", "receive_mail", "--recipient", recipient]
        return subprocess.run(command, input=raw, env=env, cwd=ROOT, capture_output=True, timeout=120)

    done = pipe(load("multipart_alternative.eml", license=license.pk), license_address(license.pk))
    assert done.returncode == 0, done.stderr
    assert Ticket.objects.get(license=license).requester_email == "jana.novak@example.com"
    assert pipe(simple(), "nobody@elsewhere.example").returncode == 67


# --- the SMTP / LMTP listener -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def listener(settings):
    """Start `make_controller(...)` on a free port; the handler's threads use their own connections, so the
    tests using it commit (transaction=True)."""
    started = []

    def start(*, lmtp=False):
        workers = 1 if connection.vendor == "sqlite" else 2
        controller = make_controller(host="127.0.0.1", port=_free_port(), lmtp=lmtp, workers=workers)
        controller.start()
        started.append(controller)
        return controller

    yield start
    for controller in started:
        controller.stop()  # also closes its threads' database connections


pytestmark_tx = pytest.mark.django_db(transaction=True)


@pytestmark_tx
def test_smtp_receives_a_mail_into_a_ticket(listener):
    license = LicenseFactory()
    server = listener()
    with smtplib.SMTP(server.hostname, server.port) as client:
        refused = client.sendmail(
            "jana.novak@example.com",
            [license_address(license.pk)],
            load("multipart_alternative.eml", license=1),
        )
    assert refused == {}
    ticket = Ticket.objects.get(license=license)
    assert ticket.requester_email == "jana.novak@example.com"
    assert [p["email"] for p in ticket.people_in_the_loop] == ["petr@example.com", "accounts@example.com"]


@pytestmark_tx
@pytest.mark.parametrize("lmtp", [False, True])
def test_a_line_over_1000_characters_is_stored_as_the_pipe_stores_it(listener, lmtp):
    # given a mail with one 5,000-character line (RFC 5321 says 1,000; real senders do it anyway)
    license = LicenseFactory()
    server = listener(lmtp=lmtp)
    raw = simple(subject="Long line").replace(b"Hi there", b"x" * 5000)
    client_class = smtplib.LMTP if lmtp else smtplib.SMTP
    # when
    with client_class(server.hostname, server.port) as client:
        refused = client.sendmail("jo@example.com", [license_address(license.pk)], raw)
    # then
    assert refused == {}
    message = Message.objects.get(ticket=Ticket.objects.get(license=license))
    assert message.text == "x" * 5000


@pytestmark_tx
def test_smtp_refuses_an_unknown_recipient_at_rcpt_time(listener):
    server = listener()
    with (
        smtplib.SMTP(server.hostname, server.port) as client,
        pytest.raises(smtplib.SMTPRecipientsRefused) as refused,
    ):
        client.sendmail("a@example.com", [license_address(777777), "x@elsewhere.example"], simple())
    assert {code for code, _ in refused.value.recipients.values()} == {550}
    assert not InboundMessage.objects.exists()


@pytestmark_tx
def test_smtp_refuses_a_message_too_large_with_552(listener, settings):
    settings.INBOUND_MAX_MESSAGE_BYTES = 5000
    license = LicenseFactory()
    server = listener()
    big = simple(body=("x" * 70 + "\n") * 300)
    with smtplib.SMTP(server.hostname, server.port) as client:
        client.ehlo()
        assert client.esmtp_features["size"] == "5000"  # announced: smtplib declares its size and is refused
        with pytest.raises(smtplib.SMTPSenderRefused) as refused:
            client.sendmail("a@example.com", [license_address(license.pk)], big)
        assert refused.value.smtp_code == 552
        # a client that does not declare the size is refused after DATA
        client.rset()
        client.mail("a@example.com")
        client.rcpt(license_address(license.pk))
        code, reply = client.data(big)
    assert code == 552, reply
    assert not Ticket.objects.exists()


@pytestmark_tx
def test_smtp_answers_451_on_database_trouble_and_a_retry_succeeds(listener, monkeypatch):
    license = LicenseFactory()
    server = listener()
    raw = simple(headers={"Message-ID": "<retry@client.example>"})
    real = inbound_services._mark_inbox_used

    def lost(*args, **kwargs):
        raise OperationalError("the database system is shutting down")

    monkeypatch.setattr(inbound_services, "_mark_inbox_used", lost)
    with (
        smtplib.SMTP(server.hostname, server.port) as client,
        pytest.raises(smtplib.SMTPDataError) as refused,
    ):
        client.sendmail("a@example.com", [license_address(license.pk)], raw)
    assert refused.value.smtp_code == 451 and not Ticket.objects.exists()
    monkeypatch.setattr(inbound_services, "_mark_inbox_used", real)
    with smtplib.SMTP(server.hostname, server.port) as client:
        client.sendmail("a@example.com", [license_address(license.pk)], raw)
        client.sendmail("a@example.com", [license_address(license.pk)], raw)  # the MTA retried once more
    assert Ticket.objects.filter(license=license).count() == 1


@pytestmark_tx
def test_smtp_hands_the_acknowledgements_to_its_relay_after_the_250(listener, smtp_server, monkeypatch):
    """The listener hands each committed acknowledgement to its relay (templates_app.send_relay), which publishes
    them in batches; the published tasks send each requester one acknowledgement."""
    published = []
    monkeypatch.setattr(send_relay, "enqueue_now", lambda task, arg: published.append((task, arg)) or True)
    license = LicenseFactory()
    server = listener()
    with smtplib.SMTP(server.hostname, server.port) as client:
        for n in range(3):
            client.sendmail(
                f"c{n}@example.com", [license_address(license.pk)], simple(sender=f"c{n}@example.com")
            )
    rows = {
        str(pk) for pk in OutboundMessage.objects.filter(kind="acknowledgement").values_list("pk", flat=True)
    }
    deadline = time.monotonic() + 20
    while (
        sum(len(arg) if isinstance(arg, list) else 1 for _, arg in published) < 3
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)  # the relay publishes after the 250s, LINGER after the first
    named = [arg if isinstance(arg, list) else [arg] for _, arg in published]
    assert len(rows) == 3 and sorted(sum(named, [])) == sorted(rows)
    for task, arg in published:
        if task == send_relay.SEND_MANY_TASK:
            tasks.send_outbound_messages(arg)
        else:
            tasks.send_outbound_message(arg)
    assert sorted(rcpt for rcpts, _ in smtp_server.messages for rcpt in rcpts) == [
        "c0@example.com",
        "c1@example.com",
        "c2@example.com",
    ]


@pytestmark_tx
def test_smtp_passes_the_null_sender_of_a_bounce(listener):
    license = LicenseFactory()
    server = listener()
    with smtplib.SMTP(server.hostname, server.port) as client:
        client.sendmail("<>", [license_address(license.pk)], simple(sender="jo@example.com"))
    inbound = InboundMessage.objects.get()
    assert inbound.kind == "ticket" and not inbound.auto_reply_allowed and "null return path" in inbound.note


@pytestmark_tx
def test_lmtp_gives_one_reply_per_recipient(listener):
    first, second = LicenseFactory(), LicenseFactory()
    server = listener(lmtp=True)
    client = smtplib.LMTP(server.hostname, server.port)
    try:
        client.ehlo_or_helo_if_needed()
        client.mail("a@example.com")
        assert client.rcpt(license_address(first.pk))[0] == 250
        assert client.rcpt(license_address(999991))[0] == 550
        assert client.rcpt(license_address(second.pk))[0] == 250
        code, _ = client.data(simple())
        assert code == 250
        assert client.getreply()[0] == 250  # the second accepted recipient's own reply (RFC 2033)
    finally:
        client.close()
    assert Ticket.objects.filter(license=first).count() == Ticket.objects.filter(license=second).count() == 1


@pytestmark_tx
def test_many_mails_over_one_connection(listener):
    license = LicenseFactory()
    server = listener()
    with smtplib.SMTP(server.hostname, server.port) as client:
        for number in range(15):
            client.sendmail("a@example.com", [license_address(license.pk)], simple(subject=f"Mail {number}"))
    assert Ticket.objects.filter(license=license).count() == 15


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
        except (OSError, IndexError):
            continue  # gone meanwhile
    return found


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_smtp_inbound_runs_several_processes_on_one_port_and_stops_on_sigterm(tmp_path):
    """The real command as a supervisor runs it: `--processes 2` serves every connection, whichever process
    accepts it; a duplicate is stored once; SIGTERM stops the parent and its children with status 0."""
    # given
    license = LicenseFactory()
    db = django_settings.DATABASES["default"]
    url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    env = {**os.environ, "DATABASE_URL": url, "MEDIA_ROOT": str(tmp_path)}
    port = _free_port()
    command = [sys.executable, "manage.py", "smtp_inbound", "--port", str(port), "--processes", "2"]
    with open(tmp_path / "stderr.log", "wb") as log:
        server = subprocess.Popen(
            [*command, "--workers", "2"], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=log, text=True
        )
    try:
        assert "2 processes" in server.stdout.readline()
        children = _children(server.pid)
        assert len(children) == 2
        # when
        twice = simple(headers={"Message-ID": "<twice@client.example>"})
        for number in range(8):
            with smtplib.SMTP("127.0.0.1", port) as client:
                client.sendmail(
                    "a@example.com", [license_address(license.pk)], simple(subject=f"Mail {number}")
                )
                client.sendmail("a@example.com", [license_address(license.pk)], twice)
        server.send_signal(signal.SIGTERM)
        # then
        assert server.wait(timeout=60) == 0, (tmp_path / "stderr.log").read_text()[-2000:]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert not any(Path(f"/proc/{pid}").exists() for pid in children)
    assert Ticket.objects.filter(license=license).count() == 9
    assert InboundMessage.objects.filter(license=license, message_id="<twice@client.example>").count() == 1
    with socket.create_server(("127.0.0.1", port)):
        pass  # the port is free again


# --- the admin's raw message --------------------------------------------------------------------------------


def _raw_url(inbound, suffix=""):
    return f"/admin/templates_app/inboundmessage/{inbound.pk}/raw/{suffix}"


def test_the_admin_shows_and_downloads_the_raw_message(superuser, license):
    raw = load("html_only.eml")
    inbound_services.inbound_message_receive(raw=raw, recipients=[license_address(license.pk)])
    inbound = InboundMessage.objects.get()
    page = superuser.get(f"/admin/templates_app/inboundmessage/{inbound.pk}/change/")
    assert page.status_code == 200 and _raw_url(inbound).encode() in page.content
    assert superuser.get("/admin/templates_app/inboundmessage/").status_code == 200
    shown = superuser.get(_raw_url(inbound))
    assert shown.status_code == 200 and shown["Content-Type"].startswith("text/plain")
    assert b"<script>alert('x')</script>" in shown.content  # as received, shown as text only
    assert "sandbox" in shown["Content-Security-Policy"]
    download = superuser.get(_raw_url(inbound, "?download=1"))
    assert download["Content-Type"] == "message/rfc822" and download.content == raw
    assert "attachment" in download["Content-Disposition"]


def test_another_licenses_raw_message_is_a_404_to_an_owner(staff_owner, license, other_license):
    inbound_services.inbound_message_receive(raw=simple(), recipients=[license_address(other_license.pk)])
    theirs = InboundMessage.objects.get(license=other_license)
    assert staff_owner.get(_raw_url(theirs)).status_code in (302, 404)
    assert staff_owner.get(_raw_url(theirs)).status_code != 200
    inbound_services.inbound_message_receive(raw=simple(), recipients=[license_address(license.pk)])
    mine = InboundMessage.objects.get(license=license)
    assert staff_owner.get(_raw_url(mine)).status_code == 200
    listing = staff_owner.get("/admin/templates_app/inboundmessage/")
    assert str(mine.pk).encode() in listing.content and str(theirs.pk).encode() not in listing.content


def test_the_admin_blocks_a_sender_audited_as_blocked_emails(superuser, license):
    from audit.models import AuditEntry

    response = superuser.post(
        "/admin/templates_app/blockedsender/add/", {"license": license.pk, "email": "@Spammy.example"}
    )
    assert response.status_code == 302
    assert BlockedSender.objects.get(license=license).email == "@spammy.example"
    assert AuditEntry.objects.filter(license_id=license.pk, target="blockedEmails", action="create").exists()
    again = superuser.post(
        "/admin/templates_app/blockedsender/add/", {"license": license.pk, "email": "@spammy.example"}
    )
    assert again.status_code == 200 and BlockedSender.objects.count() == 1
