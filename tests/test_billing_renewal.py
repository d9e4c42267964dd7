"""Renewal at the period's end (the beat task): one charge, pending reductions applied, canceled ones expire."""

import datetime

import time_machine
from django.conf import settings
from django.test import override_settings

from billing import services, tasks
from billing.gateway import set_sandbox_card
from billing.models import REASON_RENEWAL, SUCCEEDED, Charge, SandboxCharge, Subscription
from tests.factories import SubscriptionFactory

UTC = datetime.UTC
MARCH = datetime.datetime(2026, 3, 1, tzinfo=UTC)
APRIL = datetime.datetime(2026, 4, 1, tzinfo=UTC)
AFTER_APRIL_1 = APRIL + datetime.timedelta(minutes=5)


def _subscription(license, **kwargs):
    return SubscriptionFactory(license=license, activated_at=MARCH, current_period_ends_at=APRIL, **kwargs)


def test_the_beat_schedule_runs_renewal_and_reconciliation():
    tasks_scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"billing.tasks.renew_subscriptions", "billing.tasks.reconcile_charges"} <= tasks_scheduled


def test_an_active_subscription_renews_once_at_the_period_end(owner):
    # given
    subscription = _subscription(owner.license, quantity=3)
    # when, twice
    with time_machine.travel(AFTER_APRIL_1, tick=False):
        assert tasks.renew_subscriptions() == 1
        tasks.renew_subscriptions()
    # then
    charge = Charge.objects.get()
    assert (charge.reason, charge.amount, charge.status) == (REASON_RENEWAL, 3 * 2900, SUCCEEDED)
    assert SandboxCharge.objects.count() == 1
    subscription.refresh_from_db()
    assert subscription.current_period_started_at == APRIL
    assert subscription.current_period_ends_at == datetime.datetime(2026, 5, 1, tzinfo=UTC)
    assert subscription.state == "active"


def test_nothing_renews_before_the_period_ends(owner):
    _subscription(owner.license)
    with time_machine.travel(APRIL - datetime.timedelta(seconds=1), tick=False):
        assert tasks.renew_subscriptions() == 0
    assert not Charge.objects.exists()


def test_a_pending_reduction_applies_and_is_charged_at_renewal(owner):
    # given 5 seats of hd-enterprise1m, asked down to hd-team12m with 2 seats
    subscription = _subscription(owner.license, plan_code="hd-enterprise1m", quantity=5)
    with time_machine.travel(MARCH + datetime.timedelta(days=3), tick=False):
        response = owner.client.patch(
            f"/v1/subscriptions/{subscription.pk}", {"planCode": "hd-team12m", "quantity": 2}, format="json"
        )
    assert response.status_code == 200
    assert not Charge.objects.exists()
    # when
    with time_machine.travel(AFTER_APRIL_1, tick=False):
        tasks.renew_subscriptions()
    # then
    subscription.refresh_from_db()
    assert (subscription.plan_code, subscription.quantity, subscription.unit_amount_in_cents) == (
        "hd-team12m",
        2,
        2400,
    )
    assert (subscription.pending_plan_code, subscription.pending_quantity) == ("", None)
    assert subscription.current_period_ends_at == datetime.datetime(2027, 4, 1, tzinfo=UTC)
    assert Charge.objects.get().amount == 2 * 2400 * 12


def test_a_canceled_subscription_expires_at_the_period_end_without_a_charge(owner):
    # given
    subscription = _subscription(owner.license)
    with time_machine.travel(MARCH + datetime.timedelta(days=3), tick=False):
        owner.client.post(f"/v1/subscriptions/{subscription.pk}/cancel")
    # when
    with time_machine.travel(AFTER_APRIL_1, tick=False):
        tasks.renew_subscriptions()
    # then
    subscription.refresh_from_db()
    assert (subscription.state, subscription.expires_at) == ("expired", APRIL)
    assert not Charge.objects.exists()


def test_a_declined_renewal_ends_the_service(owner):
    # given
    subscription = _subscription(owner.license)
    set_sandbox_card(owner.license.pk, declines=True)
    # when
    with time_machine.travel(AFTER_APRIL_1, tick=False):
        tasks.renew_subscriptions()
    # then
    subscription.refresh_from_db()
    assert (subscription.state, subscription.expires_at) == ("expired", APRIL)
    assert Charge.objects.get().status == "declined"


@override_settings(BILLING_TRIAL_DAYS=14)
def test_a_trial_expires_at_its_end_without_a_charge(owner):
    # given
    with time_machine.travel(MARCH, tick=False):
        trial = services.subscription_start_trial(license=owner.license, plan_code="hd-team1m", quantity=3)
    # when
    with time_machine.travel(MARCH + datetime.timedelta(days=14, seconds=1), tick=False):
        tasks.renew_subscriptions()
    # then
    trial.refresh_from_db()
    assert trial.state == "expired"
    assert not Charge.objects.exists()


def test_a_renewal_interrupted_after_the_gateway_is_finished_by_the_reconciler(owner, monkeypatch):
    # given a renewal whose process dies after the gateway took the money
    _subscription(owner.license, quantity=2)
    original = services._complete_charge

    def crash(charge_id, result):
        raise RuntimeError("killed")

    monkeypatch.setattr(services, "_complete_charge", crash)
    with time_machine.travel(AFTER_APRIL_1, tick=False):
        assert tasks.renew_subscriptions() == 0  # logged, not raised
        monkeypatch.setattr(services, "_complete_charge", original)
        # a second renewal run does not charge the period again
        tasks.renew_subscriptions()
    assert SandboxCharge.objects.count() == 1
    # when
    with time_machine.travel(AFTER_APRIL_1 + datetime.timedelta(minutes=5), tick=False):
        tasks.reconcile_charges()
    # then
    subscription = Subscription.objects.get()
    assert subscription.current_period_ends_at == datetime.datetime(2026, 5, 1, tzinfo=UTC)
    assert Charge.objects.get().status == SUCCEEDED
    assert SandboxCharge.objects.count() == 1
