"""Under real concurrency (PostgreSQL): two workers send a message once; two first logins make one license."""

import threading

import pytest
from django.core.mail.backends.base import BaseEmailBackend
from django.db import connections

from accounts import services
from accounts.models import Account, License
from templates_app import mail
from templates_app.models import OutboundMessage
from tests.conftest import api_client
from tests.db_helpers import wait_for_a_lock_wait


def _in_thread(target, results, key):
    def run():
        try:
            results[key] = target()
        except Exception as exc:  # recorded for the assertion
            results[key] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


class GatedBackend(BaseEmailBackend):
    """Holds the first send until the test lets it go."""

    entered = threading.Event()
    release = threading.Event()
    sent: list = []

    def send_messages(self, messages):
        type(self).entered.set()
        type(self).release.wait(10)
        type(self).sent.extend(messages)
        return len(messages)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_workers_send_one_message_once(settings):
    # given a queued message and a mail server that is slow to answer
    settings.EMAIL_BACKEND = "tests.test_concurrency_email.GatedBackend"
    GatedBackend.entered.clear(), GatedBackend.release.clear(), GatedBackend.sent.clear()
    license = services.license_create(owner_email="o@example.com")
    message = OutboundMessage.objects.create(
        license=license, key="k", kind="test", to="x@example.com", subject="S", text="T"
    )
    results = {}
    # when a worker is sending it and a second worker (a redelivered task) starts on it
    first = _in_thread(lambda: mail.deliver(message_id=message.pk), results, "first")
    assert GatedBackend.entered.wait(10)
    second = _in_thread(lambda: mail.deliver(message_id=message.pk), results, "second")
    second.join(10)
    # then the second finds it claimed (no lock held while the relay answers) and sends nothing
    assert results["second"].status == "sending"
    GatedBackend.release.set()
    first.join(10)
    # and it went out once
    assert len(GatedBackend.sent) == 1
    assert results["first"].status == "sent"
    message.refresh_from_db()
    assert message.status == "sent" and message.attempts == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_first_logins_at_once_make_one_license(monkeypatch):
    # given a new account, and the default template's creation held until a second request is waiting
    account = Account.objects.create_user(email="new@example.com")
    _, token = services.token_issue(account=account)
    import templates_app.services as template_services

    original, entered, release = (
        template_services.template_create_default,
        threading.Event(),
        threading.Event(),
    )

    def held(*, license):
        if not entered.is_set():
            entered.set()
            release.wait(10)
        return original(license=license)

    monkeypatch.setattr(template_services, "template_create_default", held)

    def post():
        return api_client(account.pk, token).post("/v1/licenses", {"planCode": "hd-team1m"}, format="json")

    results = {}
    # when the same account creates its license twice at the same moment
    first = _in_thread(post, results, "first")
    assert entered.wait(10)
    second = _in_thread(post, results, "second")
    wait_for_a_lock_wait()
    release.set()
    first.join(10), second.join(10)
    # then one request made the license and the other was refused
    assert sorted(r.status_code for r in results.values()) == [201, 409]
    assert License.objects.count() == 1
