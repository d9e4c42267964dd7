"""IMAP polling of mailboxes against a real server (Dovecot, tests/dovecot.py): new mail becomes tickets and
replies through the inbound service, each message once across polls (and when the UID state is lost), a wrong
password or a server down → `failing` with lastError and one mail to the owners, then active again once it
works; TLS (implicit and STARTTLS) with certificates verified; a connection cut mid-fetch loses nothing and
stores nothing twice; an oversized message is skipped without stalling the rest."""

from __future__ import annotations

import os
import uuid

import pytest

from templates_app.inbound import imap
from templates_app.mailboxes import mailbox_create, mailbox_update
from templates_app.models import InboundMessage, MailboxState, OutboundMessage
from tests.dovecot import DOVECOT, Dovecot
from tests.factories import TeamFactory
from tests.mail_helpers import simple
from tests.tcp_proxy import TcpProxy
from tickets.models import Message, Ticket


@pytest.fixture(scope="session")
def dovecot():
    if DOVECOT is None:
        if os.environ.get("CI") == "true":
            pytest.fail(
                "Dovecot is not installed (apt-get install dovecot-imapd), and CI=true makes that a failure"
            )
        pytest.skip("Dovecot is not installed (apt-get install dovecot-imapd)")
    server = Dovecot()
    yield server
    server.stop()


@pytest.fixture
def account(dovecot):
    """A fresh IMAP account: (user, password)."""
    user, password = f"support-{uuid.uuid4().hex[:10]}", uuid.uuid4().hex
    dovecot.add_user(user, password)
    return user, password


@pytest.fixture
def trusted(settings, dovecot):
    settings.IMAP_CA_FILE = str(dovecot.cert)


def _mailbox(license, account, *, port, security="starttls", password=None, team=None, host="127.0.0.1"):
    user, right = account
    imap_settings = {"host": host, "port": port, "security": security, "username": user}
    imap_settings["password"] = password or right
    return mailbox_create(
        license=license, name="Support", email="support@acme.example", team=team, imap=imap_settings
    )


def _state(mailbox) -> MailboxState:
    return MailboxState.objects.get(pk=mailbox.pk)


def _failing_mails(license) -> int:
    return OutboundMessage.objects.filter(license=license, kind=imap.KIND_MAILBOX_FAILING).count()


def _mail(n: int, body: str = "") -> bytes:
    return simple(
        subject=f"Question {n}", body=body or f"Hello {n}", headers={"Message-ID": f"<q{n}@client.example>"}
    )


def test_new_mail_becomes_tickets_of_the_mailbox_team_once(license, owner, dovecot, account, trusted):
    # given a mailbox of a team, and two messages in its IMAP inbox
    team = TeamFactory(license=license)
    mailbox = _mailbox(license, account, port=dovecot.port, team=team)
    dovecot.deliver(account[0], _mail(1), _mail(2))
    # when it is polled
    result = imap.mailbox_poll(mailbox_id=mailbox.pk)
    # then each is a ticket in the mailbox's team, and the mailbox is active, fetched now
    assert result.stored == 2 and not result.error
    tickets = Ticket.objects.filter(license=license).order_by("subject")
    assert [t.subject for t in tickets] == ["Question 1", "Question 2"]
    assert all(list(t.teams.all()) == [team] for t in tickets)
    body = owner.client.get(f"/v1/mailboxes/{mailbox.pk}").json()
    assert body["status"] == "active" and body["lastFetchedAt"] is not None and body["lastError"] == ""
    # when polled again, and after a third message arrives
    assert imap.mailbox_poll(mailbox_id=mailbox.pk).stored == 0
    dovecot.deliver(account[0], _mail(3))
    assert imap.mailbox_poll(mailbox_id=mailbox.pk).stored == 1
    # then every message was read once
    assert Ticket.objects.filter(license=license).count() == 3
    assert InboundMessage.objects.filter(license=license).count() == 3


def test_a_reply_threads_into_its_ticket(license, dovecot, account, trusted):
    mailbox = _mailbox(license, account, port=dovecot.port)
    dovecot.deliver(account[0], _mail(1))
    imap.mailbox_poll(mailbox_id=mailbox.pk)
    ticket = Ticket.objects.get(license=license)
    # when the customer answers in the same thread
    reply = simple(subject="Re: Question 1", body="More", headers={"In-Reply-To": "<q1@client.example>"})
    dovecot.deliver(account[0], reply)
    imap.mailbox_poll(mailbox_id=mailbox.pk)
    # then it is a message of that ticket, no new ticket
    assert Ticket.objects.filter(license=license).count() == 1
    assert Message.objects.filter(ticket=ticket).count() == 2


def test_a_lost_uid_state_or_a_new_uidvalidity_stores_nothing_twice(license, dovecot, account, trusted):
    mailbox = _mailbox(license, account, port=dovecot.port)
    dovecot.deliver(account[0], _mail(1), _mail(2))
    imap.mailbox_poll(mailbox_id=mailbox.pk)
    # when the UID state is lost (a restore, a new UIDVALIDITY): every message is read again
    MailboxState.objects.filter(pk=mailbox.pk).update(uid_validity=None, last_uid=0, next_poll_at=None)
    result = imap.mailbox_poll(mailbox_id=mailbox.pk)
    # then the Message-IDs already stored keep them from being stored twice
    assert result.stored == 2 and not result.error
    assert Ticket.objects.filter(license=license).count() == 2
    assert InboundMessage.objects.filter(license=license).count() == 2


def test_a_wrong_password_is_failing_mailed_once_and_recovers(license, owner, dovecot, account, trusted):
    # given a mailbox whose password is wrong
    mailbox = _mailbox(license, account, port=dovecot.port, password="wrong")
    dovecot.deliver(account[0], _mail(1))
    # when it is polled, twice (Dovecot delays each further login from this address by seconds)
    for _ in range(2):
        MailboxState.objects.filter(pk=mailbox.pk).update(next_poll_at=None)
        result = imap.mailbox_poll(mailbox_id=mailbox.pk)
    # then it is failing with the server's answer, backed off, and the owners got one mail
    assert "refused" in result.error
    body = owner.client.get(f"/v1/mailboxes/{mailbox.pk}").json()
    assert (
        body["status"] == "failing"
        and "AUTHENTICATIONFAILED" in body["lastError"]
        or "failed" in body["lastError"]
    )
    state = _state(mailbox)
    assert state.failures == 2 and state.next_poll_at is not None
    assert _failing_mails(license) == 1
    # the mailbox is not due again before its backoff
    assert imap.mailboxes_poll_due() == 0
    # when the owner fixes the password
    mailbox_update(mailbox=mailbox, imap={"host": "127.0.0.1", "port": dovecot.port, "security": "starttls",
                                          "username": account[0], "password": account[1]})  # fmt: skip
    result = imap.mailbox_poll(mailbox_id=mailbox.pk)
    # then it is active again and the mail is read
    assert result.stored == 1
    body = owner.client.get(f"/v1/mailboxes/{mailbox.pk}").json()
    assert (body["status"], body["lastError"]) == ("active", "")
    assert _failing_mails(license) == 1


def test_a_server_down_is_failing_and_recovers_by_itself(license, owner, dovecot, account, trusted):
    proxy = TcpProxy("127.0.0.1", dovecot.port)
    try:
        mailbox = _mailbox(license, account, port=proxy.port)
        dovecot.deliver(account[0], _mail(1))
        proxy.cut()
        # when the server is unreachable, twice
        first = imap.mailbox_poll(mailbox_id=mailbox.pk)
        imap.mailbox_poll(mailbox_id=mailbox.pk)
        # then failing, never raised, one mail to the owners
        assert first.error
        assert owner.client.get(f"/v1/mailboxes/{mailbox.pk}").json()["status"] == "failing"
        assert _failing_mails(license) == 1
        # when it is back: active, and the mail is read
        proxy.restore()
        assert imap.mailbox_poll(mailbox_id=mailbox.pk).stored == 1
        assert owner.client.get(f"/v1/mailboxes/{mailbox.pk}").json()["status"] == "active"
    finally:
        proxy.close()


def test_nothing_listens_is_failing(license, owner, account):
    closed = TcpProxy("127.0.0.1", 9)
    port = closed.port
    closed.close()
    mailbox = _mailbox(license, account, port=port, security="ssl")
    result = imap.mailbox_poll(mailbox_id=mailbox.pk)
    assert "could not connect" in result.error or "broke" in result.error
    assert owner.client.get(f"/v1/mailboxes/{mailbox.pk}").json()["status"] == "failing"


def test_implicit_tls_with_a_trusted_certificate(license, dovecot, account, trusted):
    mailbox = _mailbox(license, account, port=dovecot.ssl_port, security="ssl")
    dovecot.deliver(account[0], _mail(1))
    assert imap.mailbox_poll(mailbox_id=mailbox.pk).stored == 1


@pytest.mark.parametrize("security", ["ssl", "starttls"])
def test_an_untrusted_certificate_is_refused(license, dovecot, account, security):
    # given the server's self-signed certificate, not trusted (no IMAP_CA_FILE)
    port = dovecot.ssl_port if security == "ssl" else dovecot.port
    mailbox = _mailbox(license, account, port=port, security=security)
    dovecot.deliver(account[0], _mail(1))
    # when polled: no password was sent, nothing read
    result = imap.mailbox_poll(mailbox_id=mailbox.pk)
    assert "TLS failed" in result.error and "CERTIFICATE_VERIFY_FAILED" in result.error
    assert _state(mailbox).failing and Ticket.objects.filter(license=license).count() == 0


def test_a_certificate_for_another_host_is_refused(license, dovecot, account, trusted):
    # the certificate names 127.0.0.1 and localhost; the mailbox names the host by another name
    mailbox = _mailbox(license, account, port=dovecot.ssl_port, security="ssl", host="127.0.0.2")
    result = imap.mailbox_poll(mailbox_id=mailbox.pk)
    assert result.error  # a mismatch, or nothing listening there: either way nothing is read
    assert Ticket.objects.filter(license=license).count() == 0


def test_a_connection_cut_mid_fetch_loses_nothing_and_stores_nothing_twice(
    license, dovecot, account, trusted, monkeypatch
):
    # given five messages, and a connection that breaks while the third is fetched
    proxy = TcpProxy("127.0.0.1", dovecot.port)
    try:
        mailbox = _mailbox(license, account, port=proxy.port)
        dovecot.deliver(account[0], *(_mail(n) for n in range(1, 6)))
        fetch, calls = imap._message, []

        def cut_on_third(client, uid):
            calls.append(uid)
            if len(calls) == 3:
                proxy.cut()
                proxy.restore()  # the next poll gets through
            return fetch(client, uid)

        monkeypatch.setattr(imap, "_message", cut_on_third)
        # when polled: the cut ends the poll
        first = imap.mailbox_poll(mailbox_id=mailbox.pk)
        assert first.error
        assert Ticket.objects.filter(license=license).count() == 2
        assert _state(mailbox).last_uid == 2
        # when polled again
        second = imap.mailbox_poll(mailbox_id=mailbox.pk)
        # then the other three are read, each message stored once
        assert second.stored == 3 and not second.error
        subjects = sorted(Ticket.objects.filter(license=license).values_list("subject", flat=True))
        assert subjects == [f"Question {n}" for n in range(1, 6)]
    finally:
        proxy.close()


def test_a_poll_killed_after_storing_before_counting_stores_nothing_twice(
    license, dovecot, account, trusted, monkeypatch
):
    # given a worker that dies once the second message is stored but before its UID is counted: the transaction
    # storing a message also counts its UID, so the death rolls both back
    mailbox = _mailbox(license, account, port=dovecot.port)
    dovecot.deliver(account[0], _mail(1), _mail(2), _mail(3))
    receive, calls = imap.inbound.inbound_message_receive, []

    def dies_after_second(**kwargs):
        result = receive(**kwargs)
        calls.append(1)
        if len(calls) == 2:
            raise SystemExit("worker killed")
        return result

    monkeypatch.setattr(imap.inbound, "inbound_message_receive", dies_after_second)
    with pytest.raises(SystemExit):
        imap.mailbox_poll(mailbox_id=mailbox.pk)
    assert Ticket.objects.filter(license=license).count() == 1
    monkeypatch.setattr(imap.inbound, "inbound_message_receive", receive)
    # the lease of the killed poll is released here by its finally; a worker killed outright leaves it to expire
    MailboxState.objects.filter(pk=mailbox.pk).update(lease_until=None)
    assert imap.mailbox_poll(mailbox_id=mailbox.pk).stored == 2
    assert Ticket.objects.filter(license=license).count() == 3


def test_an_oversized_message_is_skipped_and_named_the_rest_read(
    license, owner, dovecot, account, trusted, settings
):
    settings.INBOUND_MAX_MESSAGE_BYTES = 2000
    mailbox = _mailbox(license, account, port=dovecot.port)
    dovecot.deliver(account[0], _mail(1), _mail(2, body="x" * 5000), _mail(3))
    result = imap.mailbox_poll(mailbox_id=mailbox.pk)
    assert result.stored == 2 and len(result.skipped) == 1
    body = owner.client.get(f"/v1/mailboxes/{mailbox.pk}").json()
    assert body["status"] == "active" and "UID 2" in body["lastError"]
    assert imap.mailbox_poll(mailbox_id=mailbox.pk).stored == 0  # not tried again


def test_a_poll_is_bounded_and_leaves_the_rest_for_the_next(license, dovecot, account, trusted, settings):
    settings.IMAP_MAX_MESSAGES_PER_POLL = 2
    mailbox = _mailbox(license, account, port=dovecot.port)
    dovecot.deliver(account[0], *(_mail(n) for n in range(1, 6)))
    first = imap.mailbox_poll(mailbox_id=mailbox.pk)
    assert (first.stored, first.more) == (2, True)
    assert imap.mailboxes_poll_due() >= 1  # due again at once
    while imap.mailbox_poll(mailbox_id=mailbox.pk).more:
        pass
    assert Ticket.objects.filter(license=license).count() == 5


def test_beat_enqueues_due_mailboxes_only(license, account, monkeypatch):
    enqueued = []
    monkeypatch.setattr(imap, "enqueue_now", lambda task, *args: enqueued.append((task, args)))
    polled = _mailbox(license, account, port=1)
    mailbox_create(license=license, name="Forward only", email="sales@acme.example")
    disabled = mailbox_create(license=license, name="Off", email="off@acme.example", status="disabled",
                              imap={"host": "h", "security": "ssl", "username": "u", "password": "p"})  # fmt: skip
    assert imap.mailboxes_poll_due() == 1
    assert enqueued == [(imap.POLL_TASK, (str(polled.pk),))]
    assert imap.mailboxes_poll_due() == 0  # not due again before IMAP_POLL_SECONDS
    assert imap.mailbox_poll(mailbox_id=disabled.pk) is None


def test_one_poll_at_a_time(license, dovecot, account, trusted):
    mailbox = _mailbox(license, account, port=dovecot.port)
    assert imap._lease(mailbox.pk)
    assert imap.mailbox_poll(mailbox_id=mailbox.pk) is None  # another poll holds the lease


def test_beat_polls_through_the_tasks(license, dovecot, account, trusted, eager_tasks, settings):
    # given beat's schedule entry, and a mailbox with mail
    from templates_app import tasks

    assert settings.CELERY_BEAT_SCHEDULE["poll-mailboxes"]["task"] == "templates_app.tasks.poll_mailboxes"
    mailbox = _mailbox(license, account, port=dovecot.port)
    dovecot.deliver(account[0], _mail(1))
    # when beat's task runs (the poll of each due mailbox enqueued as its own task, run eagerly here)
    assert tasks.poll_mailboxes() == 1
    # then the mail is a ticket
    assert Ticket.objects.filter(license=license).count() == 1
    assert _state(mailbox).last_fetched_at is not None


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_polled_mail_is_stored_again_refused_when_another_took_the_last_acknowledgement_meanwhile(
    license, dovecot, account, trusted, settings, monkeypatch
):
    # given one acknowledgement per sender and hour, and a mail from the client in the mailbox
    import threading

    from django.db import connection

    from templates_app.inbound import services as inbound_services

    settings.INBOUND_AUTO_REPLIES_PER_HOUR = 1
    mailbox = _mailbox(license, account, port=dovecot.port)
    dovecot.deliver(account[0], simple(sender="warm-up@other.example", subject="Warm-up"))
    assert imap.mailbox_poll(mailbox_id=mailbox.pk).stored == 1  # the license's first mail also locks it
    dovecot.deliver(account[0], _mail(1))
    # and, while the poll writes it, another worker commits another mail of the client, acknowledged (its row
    # alone: a whole mail would wait for the poll's ticket number, taken inside the poll's transaction)
    handle, calls = inbound_services._handle, []

    def another_mail_meanwhile(*args, **kwargs):
        handle(*args, **kwargs)
        calls.append(1)
        if len(calls) == 1:

            def commit():
                try:
                    InboundMessage.objects.create(
                        license=license, message_id="<meanwhile@client.example>", kind="ticket",
                        sender="client@example.com", subject="Meanwhile", auto_reply_allowed=True,
                    )  # fmt: skip
                finally:
                    connection.close()

            other = threading.Thread(target=commit)
            other.start()
            other.join(10)

    monkeypatch.setattr(inbound_services, "_handle", another_mail_meanwhile)
    # when the poll commits: its acknowledgement, confirmed, is one too many
    assert imap.mailbox_poll(mailbox_id=mailbox.pk).stored == 1
    # then the polled mail was stored again (its UID counted once), refused, without an acknowledgement
    assert len(calls) == 2
    received = dict(
        InboundMessage.objects.filter(license=license).values_list("subject", "auto_reply_allowed")
    )
    assert received == {"Warm-up": True, "Meanwhile": True, "Question 1": False}
    assert Ticket.objects.filter(license=license).count() == 2
    acknowledged = OutboundMessage.objects.filter(license=license, kind=OutboundMessage.KIND_ACKNOWLEDGEMENT)
    assert list(acknowledged.values_list("ticket__subject", flat=True)) == ["Warm-up"]
    assert imap.mailbox_poll(mailbox_id=mailbox.pk).stored == 0
