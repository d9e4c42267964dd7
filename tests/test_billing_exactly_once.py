"""Exactly-once charging: Idempotency-Key replays, declines that change nothing, crashes that are reconciled
without a second charge, and concurrent changes of one subscription."""

import datetime
import threading
import time
import uuid

import pytest
import time_machine
from django.db import connection, transaction
from django.test import override_settings

from billing import services, tasks
from billing.gateway import GatewayUnavailable, SandboxGateway, set_sandbox_card
from billing.models import DECLINED, INTENT, SUCCEEDED, Charge, IdempotencyRecord, SandboxCharge, Subscription
from tests.conftest import api_client, make_persona
from tests.factories import SubscriptionFactory

UTC = datetime.UTC
MARCH = datetime.datetime(2026, 3, 1, tzinfo=UTC)
APRIL = datetime.datetime(2026, 4, 1, tzinfo=UTC)


def _subscription(license, quantity=5):
    return SubscriptionFactory(
        license=license, quantity=quantity, activated_at=MARCH, current_period_ends_at=APRIL
    )


def _key() -> dict:
    return {"HTTP_IDEMPOTENCY_KEY": str(uuid.uuid4())}


# --- Idempotency-Key ---------------------------------------------------------------------------------------


def test_a_replayed_create_returns_the_first_response_and_charges_once(owner):
    # given
    key = _key()
    body = {"planCode": "hd-team3m", "quantity": 2}
    first = owner.client.post("/v1/subscriptions", body, format="json", **key)
    # when
    second = owner.client.post("/v1/subscriptions", body, format="json", **key)
    # then
    assert first.status_code == second.status_code == 201
    assert second.content == first.content
    assert second["Idempotent-Replayed"] == "true"
    assert Subscription.objects.count() == 1
    assert Charge.objects.count() == SandboxCharge.objects.count() == 1


def test_a_replayed_quantity_change_returns_the_same_body_and_charges_once(owner):
    # given
    subscription = _subscription(owner.license)
    key = _key()
    with time_machine.travel(MARCH, tick=False):
        first = owner.client.patch(
            f"/v1/subscriptions/{subscription.pk}", {"quantity": 6}, format="json", **key
        )
    # when, later: the same request again
    with time_machine.travel(MARCH + datetime.timedelta(days=5), tick=False):
        second = owner.client.patch(
            f"/v1/subscriptions/{subscription.pk}", {"quantity": 6}, format="json", **key
        )
    # then
    assert first.status_code == second.status_code == 200
    assert second.content == first.content
    assert Charge.objects.get().amount == 2900
    assert SandboxCharge.objects.count() == 1


def test_the_same_key_with_other_parameters_is_a_409(owner):
    # given
    subscription = _subscription(owner.license)
    key = _key()
    with time_machine.travel(MARCH, tick=False):
        owner.client.patch(f"/v1/subscriptions/{subscription.pk}", {"quantity": 6}, format="json", **key)
        # when
        response = owner.client.patch(
            f"/v1/subscriptions/{subscription.pk}", {"quantity": 7}, format="json", **key
        )
    # then
    assert response.status_code == 409
    assert response.json()["code"] == "idempotency_key_reused"
    assert Subscription.objects.get().quantity == 6
    assert Charge.objects.count() == 1


def test_the_same_key_on_another_route_is_a_409(owner):
    # given
    subscription = _subscription(owner.license)
    key = _key()
    owner.client.post(f"/v1/subscriptions/{subscription.pk}/cancel", **key)
    # when
    response = owner.client.post(f"/v1/subscriptions/{subscription.pk}/reactivate", **key)
    # then
    assert response.status_code == 409
    assert response.json()["code"] == "idempotency_key_reused"
    assert Subscription.objects.get().state == "canceled"


def test_keys_belong_to_one_license(owner, outsider):
    # given the same key used by two licenses
    key = _key()
    body = {"planCode": "hd-team1m", "quantity": 1}
    # when
    mine = owner.client.post("/v1/subscriptions", body, format="json", **key)
    theirs = outsider.client.post("/v1/subscriptions", body, format="json", **key)
    # then each is its own request
    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["subscriptionID"] != theirs.json()["subscriptionID"]
    assert SandboxCharge.objects.count() == 2


def test_a_rejected_request_is_replayed_as_rejected(owner):
    # given
    key = _key()
    body = {"planCode": "hd-team1m", "quantity": 1, "couponCode": "NOPE"}
    first = owner.client.post("/v1/subscriptions", body, format="json", **key)
    # when
    second = owner.client.post("/v1/subscriptions", body, format="json", **key)
    # then
    assert first.status_code == second.status_code == 400
    assert second.content == first.content


def test_an_invalid_key_is_a_400_naming_the_header(owner):
    response = owner.client.post(
        "/v1/subscriptions",
        {"planCode": "hd-team1m", "quantity": 1},
        format="json",
        HTTP_IDEMPOTENCY_KEY="x" * 300,
    )
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["details"]


# --- declines ----------------------------------------------------------------------------------------------


def test_a_declined_quantity_change_changes_nothing(owner):
    # given
    subscription = _subscription(owner.license)
    before = owner.client.get("/v1/subscriptions").json()
    set_sandbox_card(owner.license.pk, declines=True)
    key = _key()
    # when
    with time_machine.travel(MARCH, tick=False):
        response = owner.client.patch(
            f"/v1/subscriptions/{subscription.pk}", {"quantity": 9}, format="json", **key
        )
    # then
    assert response.status_code == 402
    assert response.json()["code"] == "card_declined"
    assert owner.client.get("/v1/subscriptions").json() == before
    charge = Charge.objects.get()
    assert (charge.status, charge.amount, charge.completed_at is not None) == (DECLINED, 4 * 2900, True)
    assert Subscription.objects.get().charge_in_flight is None
    # and the same request again gets the same answer, without asking the card again
    replay = owner.client.patch(f"/v1/subscriptions/{subscription.pk}", {"quantity": 9}, format="json", **key)
    assert (replay.status_code, replay.content) == (402, response.content)
    assert SandboxCharge.objects.count() == 1


@override_settings(BILLING_SANDBOX_DECLINE=True)
def test_a_declined_create_leaves_no_subscription_in_service(owner):
    # when
    response = owner.client.post("/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 2}, format="json")
    # then
    assert response.status_code == 402
    assert response.json()["code"] == "card_declined"
    assert not Subscription.objects.filter(state__in=["active", "canceled", "pending"]).exists()
    assert Charge.objects.get().status == DECLINED
    assert owner.client.get("/v1/licenses").json()[0]["subscription"] is None
    # and a new attempt with a working card goes through
    with override_settings(BILLING_SANDBOX_DECLINE=False):
        retry = owner.client.post(
            "/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 2}, format="json"
        )
    assert retry.status_code == 201


@override_settings(BILLING_SANDBOX_DECLINE=True)
def test_a_declined_reactivation_leaves_the_subscription_expired(owner):
    # given
    subscription = SubscriptionFactory(license=owner.license, state="expired")
    # when
    response = owner.client.post(f"/v1/subscriptions/{subscription.pk}/reactivate")
    # then
    assert response.status_code == 402
    assert Subscription.objects.get().state == "expired"


# --- the gateway -------------------------------------------------------------------------------------------


def test_the_sandbox_returns_the_first_result_for_a_known_key(db):
    # given
    gateway = SandboxGateway()
    first = gateway.charge(amount=500, currency="USD", idempotency_key="k1", license_id=1)
    # when
    with override_settings(BILLING_SANDBOX_DECLINE=True):
        again = gateway.charge(amount=500, currency="USD", idempotency_key="k1", license_id=1)
        other_amount = gateway.charge(amount=900, currency="USD", idempotency_key="k1", license_id=1)
    # then
    assert first.succeeded and again == first
    assert other_amount.status == "failed"
    assert SandboxCharge.objects.count() == 1


def test_the_sandbox_refunds_once_per_key_and_at_most_what_was_charged(db):
    gateway = SandboxGateway()
    charge = gateway.charge(amount=500, currency="USD", idempotency_key="k1", license_id=1)
    assert gateway.refund(reference=charge.reference, amount=300, idempotency_key="r1").succeeded
    assert gateway.refund(reference=charge.reference, amount=300, idempotency_key="r1").succeeded  # replayed
    assert not gateway.refund(reference=charge.reference, amount=300, idempotency_key="r2").succeeded
    assert SandboxCharge.objects.get().refunded_amount == 300


def test_billing_requests_are_never_wrapped_in_one_transaction():
    from django.urls import resolve

    for path in (
        "/v1/subscriptions",
        f"/v1/subscriptions/{uuid.uuid4()}",
        f"/v1/subscriptions/{uuid.uuid4()}/cancel",
    ):
        assert "default" in resolve(path).func._non_atomic_requests


# --- crashes and reconciliation ----------------------------------------------------------------------------


def _crash_after_the_gateway(monkeypatch):
    def crash(charge_id, result):
        assert result.succeeded  # the money is taken...
        raise RuntimeError("process killed before the ledger was updated")

    monkeypatch.setattr(services, "_complete_charge", crash)


def test_a_crash_after_the_gateway_is_reconciled_without_a_second_charge(owner, monkeypatch):
    # given a quantity change whose process dies after the gateway took the money
    subscription = _subscription(owner.license)
    key = _key()
    original = services._complete_charge
    _crash_after_the_gateway(monkeypatch)
    with time_machine.travel(MARCH, tick=False):
        crashed = owner.client.patch(
            f"/v1/subscriptions/{subscription.pk}", {"quantity": 8}, format="json", **key
        )
    monkeypatch.setattr(services, "_complete_charge", original)
    assert crashed.status_code == 500
    charge = Charge.objects.get()
    assert charge.status == INTENT
    assert SandboxCharge.objects.get().status == SUCCEEDED
    assert Subscription.objects.get().quantity == 5
    # meanwhile the subscription takes no other change, and the same request waits for the outcome
    with time_machine.travel(MARCH + datetime.timedelta(seconds=30), tick=False):
        other = owner.client.patch(
            f"/v1/subscriptions/{subscription.pk}", {"quantity": 9}, format="json", **_key()
        )
        same = owner.client.patch(
            f"/v1/subscriptions/{subscription.pk}", {"quantity": 8}, format="json", **key
        )
        assert tasks.reconcile_charges() == 0  # too fresh: the request may still be finishing it
    assert (other.status_code, other.json()["code"]) == (409, "charge_in_progress")
    assert (same.status_code, same.json()["code"]) == (409, "idempotency_key_in_use")
    # when the reconciler runs
    with time_machine.travel(MARCH + datetime.timedelta(minutes=5), tick=False):
        assert tasks.reconcile_charges() == 1
        assert tasks.reconcile_charges() == 0
    # then the change is applied, once, for the money taken once
    charge.refresh_from_db()
    assert (charge.status, charge.amount) == (SUCCEEDED, 3 * 2900)
    assert charge.gateway_reference == SandboxCharge.objects.get().reference
    assert SandboxCharge.objects.count() == 1
    subscription.refresh_from_db()
    assert (subscription.quantity, subscription.charge_in_flight) == (8, None)
    # and the client's retry gets the outcome
    retry = owner.client.patch(f"/v1/subscriptions/{subscription.pk}", {"quantity": 8}, format="json", **key)
    assert retry.status_code == 200
    assert retry.json()["quantity"] == 8
    assert SandboxCharge.objects.count() == Charge.objects.count() == 1


def test_a_crashed_create_is_reconciled_into_an_active_subscription(owner, monkeypatch):
    # given
    key = _key()
    original = services._complete_charge
    _crash_after_the_gateway(monkeypatch)
    crashed = owner.client.post(
        "/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 2}, format="json", **key
    )
    monkeypatch.setattr(services, "_complete_charge", original)
    assert crashed.status_code == 500
    assert Subscription.objects.get().state == "pending"
    # when
    with time_machine.travel(datetime.datetime.now(UTC) + datetime.timedelta(minutes=5)):
        tasks.reconcile_charges()
    # then
    assert Subscription.objects.get().state == "active"
    retry = owner.client.post(
        "/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 2}, format="json", **key
    )
    assert retry.status_code == 201
    assert retry.json()["state"] == "active"
    assert SandboxCharge.objects.count() == Charge.objects.count() == 1


class UnreachableGateway(SandboxGateway):
    def charge(self, **kwargs):
        raise GatewayUnavailable("timeout")


@override_settings(BILLING_GATEWAY="tests.test_billing_exactly_once.UnreachableGateway")
def test_an_unreachable_gateway_is_a_503_and_the_charge_is_finished_later(owner):
    # given
    subscription = _subscription(owner.license)
    key = _key()
    with time_machine.travel(MARCH, tick=False):
        response = owner.client.patch(
            f"/v1/subscriptions/{subscription.pk}", {"quantity": 6}, format="json", **key
        )
    assert response.status_code == 503
    assert response.json()["code"] == "payment_gateway_unavailable"
    assert Charge.objects.get().status == INTENT
    # when the gateway is back and the reconciler runs
    with (
        override_settings(BILLING_GATEWAY="billing.gateway.SandboxGateway"),
        time_machine.travel(MARCH + datetime.timedelta(minutes=5), tick=False),
    ):
        tasks.reconcile_charges()
    # then
    assert Subscription.objects.get().quantity == 6
    assert IdempotencyRecord.objects.get().status == 200
    assert SandboxCharge.objects.count() == 1


# --- concurrency -------------------------------------------------------------------------------------------


def _in_parallel(function, arguments) -> None:
    threads = [threading.Thread(target=function, args=(argument,)) for argument in arguments]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)


def _slow_gateway(monkeypatch, seconds=0.02):
    charge = SandboxGateway.charge

    def slow(self, **kwargs):
        time.sleep(seconds)
        return charge(self, **kwargs)

    monkeypatch.setattr(SandboxGateway, "charge", slow)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_same_request_sent_ten_times_at_once_charges_once(monkeypatch):
    # given
    from tests.factories import LicenseFactory

    owner = make_persona(LicenseFactory().agents.get())
    subscription = _subscription(owner.license)
    _slow_gateway(monkeypatch)
    start = threading.Barrier(10, timeout=30)
    responses = []

    def send(_):
        try:
            start.wait()
            response = api_client(owner.account.pk, owner.token).patch(
                f"/v1/subscriptions/{subscription.pk}",
                {"quantity": 9},
                format="json",
                HTTP_IDEMPOTENCY_KEY="once",
            )
            responses.append((response.status_code, response.content))
        finally:
            connection.close()

    # when
    with time_machine.travel(MARCH, tick=False):
        _in_parallel(send, range(10))
    # then one did the work, the others were told it was under way or got its answer
    statuses = [status for status, _ in responses]
    assert set(statuses) <= {200, 409} and 200 in statuses
    assert len({content for status, content in responses if status == 200}) == 1
    assert Charge.objects.get().amount == 4 * 2900
    assert SandboxCharge.objects.count() == 1
    assert Subscription.objects.get().quantity == 9


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_creates_make_one_subscription_and_one_charge(monkeypatch):
    # given
    from tests.factories import LicenseFactory

    owner = make_persona(LicenseFactory().agents.get())
    _slow_gateway(monkeypatch)
    start = threading.Barrier(8, timeout=30)
    responses = []

    def create(n):
        try:
            start.wait()
            response = api_client(owner.account.pk, owner.token).post(
                "/v1/subscriptions",
                {"planCode": "hd-team1m", "quantity": 2},
                format="json",
                HTTP_IDEMPOTENCY_KEY=f"c{n}",
            )
            responses.append((response.status_code, response.json().get("code")))
        finally:
            connection.close()

    # when
    _in_parallel(create, range(8))
    # then
    assert sorted(responses, key=str) == sorted([(201, None)] + [(409, "subscription_exists")] * 7, key=str)
    assert Subscription.objects.get().state == "active"
    assert Charge.objects.count() == SandboxCharge.objects.count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_quantity_changes_charge_each_seat_exactly_once(monkeypatch):
    # given 5 seats, and a gateway slow enough for the requests to overlap
    from tests.factories import LicenseFactory

    owner = make_persona(LicenseFactory().agents.get())
    subscription = _subscription(owner.license)
    _slow_gateway(monkeypatch)
    wanted = list(range(6, 26))  # 20 different quantities
    results: dict[int, list] = {}
    start = threading.Barrier(len(wanted), timeout=30)

    def change(quantity):
        client = api_client(owner.account.pk, owner.token)
        key = {"HTTP_IDEMPOTENCY_KEY": f"q{quantity}"}
        attempts = []
        try:
            start.wait()
            for _ in range(1000):  # a real client: retry with the same key while the subscription is busy
                response = client.patch(
                    f"/v1/subscriptions/{subscription.pk}", {"quantity": quantity}, format="json", **key
                )
                attempts.append((response.status_code, response.json()))
                if response.status_code != 409:
                    break
                time.sleep(0.005)
        finally:
            results[quantity] = attempts
            connection.close()

    # when
    with time_machine.travel(MARCH, tick=False):
        _in_parallel(change, wanted)

    # then every request ended in a 200, and the only refusals on the way were "busy, retry"
    finals = {q: attempts[-1] for q, attempts in results.items()}
    assert {status for status, _ in finals.values()} == {200}, finals
    refusals = {body["code"] for attempts in results.values() for status, body in attempts if status == 409}
    assert refusals <= {"charge_in_progress", "idempotency_key_in_use"}
    # each charge paid for a distinct rise, and the rises chain from 5 to the final quantity
    subscription.refresh_from_db()
    charges = list(Charge.objects.filter(status=SUCCEEDED).order_by("change__quantity"))
    assert not Charge.objects.exclude(status=SUCCEEDED).exists()
    raised_to = [charge.change["quantity"] for charge in charges]
    assert len(set(raised_to)) == len(raised_to)
    steps = list(zip([5, *raised_to], raised_to, strict=False))
    assert [charge.amount for charge in charges] == [(new - old) * 2900 for old, new in steps]
    assert subscription.quantity == raised_to[-1] == 25
    # the money taken is exactly the seats added, once: 20 seats for the whole period
    assert sum(charge.amount for charge in charges) == (subscription.quantity - 5) * 2900 == 58000
    assert sorted(SandboxCharge.objects.values_list("amount", flat=True)) == sorted(c.amount for c in charges)
    # each charge belongs to the one request that made it
    charged_keys = {charge.request.key for charge in charges}
    assert len(charged_keys) == len(charges)
    assert charged_keys == {f"q{q}" for q in raised_to}
    assert subscription.charge_in_flight is None


def test_old_and_abandoned_keys_are_forgotten_but_not_those_of_unfinished_charges(owner, monkeypatch):
    # given an answered key, an abandoned one (its request died before charging) and one with an open intent
    subscription = _subscription(owner.license)
    with time_machine.travel(MARCH, tick=False):
        owner.client.post(f"/v1/subscriptions/{subscription.pk}/cancel", HTTP_IDEMPOTENCY_KEY="answered")
        owner.client.post(
            f"/v1/subscriptions/{subscription.pk}/reactivate", HTTP_IDEMPOTENCY_KEY="answered-2"
        )
        IdempotencyRecord.objects.create(license=owner.license, key="abandoned", fingerprint="x")
        _crash_after_the_gateway(monkeypatch)
        owner.client.patch(
            f"/v1/subscriptions/{subscription.pk}",
            {"quantity": 7},
            format="json",
            HTTP_IDEMPOTENCY_KEY="unfinished",
        )
    # when, ten minutes later: only the abandoned one goes
    with time_machine.travel(MARCH + datetime.timedelta(minutes=10), tick=False):
        tasks.purge_idempotency_records()
    assert set(IdempotencyRecord.objects.values_list("key", flat=True)) == {
        "answered",
        "answered-2",
        "unfinished",
    }
    # and two days later the answered ones too
    with time_machine.travel(MARCH + datetime.timedelta(days=2), tick=False):
        tasks.purge_idempotency_records()
    assert set(IdempotencyRecord.objects.values_list("key", flat=True)) == {"unfinished"}


def test_a_change_after_the_period_ended_waits_for_the_renewal(owner):
    # given a period that ended minutes ago, not renewed yet
    subscription = _subscription(owner.license)
    # when
    with time_machine.travel(APRIL + datetime.timedelta(minutes=2), tick=False):
        response = owner.client.patch(f"/v1/subscriptions/{subscription.pk}", {"quantity": 9}, format="json")
    # then nothing is given away for free
    assert response.status_code == 409
    assert response.json()["code"] == "renewal_due"
    assert response["Retry-After"] == "60"
    assert Subscription.objects.get().quantity == 5


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_intent_is_committed_and_no_row_lock_is_held_while_the_gateway_is_called(monkeypatch):
    # given
    from tests.factories import LicenseFactory

    owner = make_persona(LicenseFactory().agents.get())
    subscription = _subscription(owner.license)
    seen = {}
    charge = SandboxGateway.charge

    def observing(self, **kwargs):
        def look(_):  # from another connection, as the reconciler or another request would
            try:
                seen["intent"] = Charge.objects.filter(
                    idempotency_key=kwargs["idempotency_key"], status=INTENT
                ).exists()
                with transaction.atomic():
                    seen["lockable"] = (
                        Subscription.objects.select_for_update(nowait=True)
                        .filter(pk=subscription.pk)
                        .exists()
                    )
            finally:
                connection.close()

        _in_parallel(look, [None])
        return charge(self, **kwargs)

    monkeypatch.setattr(SandboxGateway, "charge", observing)
    # when
    with time_machine.travel(MARCH, tick=False):
        response = owner.client.patch(f"/v1/subscriptions/{subscription.pk}", {"quantity": 6}, format="json")
    # then
    assert response.status_code == 200
    assert seen == {"intent": True, "lockable": True}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_renewal_run_by_several_workers_at_once_charges_the_period_once(monkeypatch):
    # given a subscription due for renewal, and two beat processes by mistake
    from tests.factories import LicenseFactory

    license = LicenseFactory()
    _subscription(license, quantity=3)
    _slow_gateway(monkeypatch)
    start = threading.Barrier(4, timeout=30)

    def renew(_):
        try:
            start.wait()
            tasks.renew_subscriptions()
        finally:
            connection.close()

    # when
    with time_machine.travel(APRIL + datetime.timedelta(minutes=1), tick=False):
        _in_parallel(renew, range(4))
    # then
    assert Charge.objects.get().amount == 3 * 2900
    assert SandboxCharge.objects.count() == 1
    assert Subscription.objects.get().current_period_ends_at == datetime.datetime(2026, 5, 1, tzinfo=UTC)
