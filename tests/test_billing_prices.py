"""Price arithmetic: every plan's first charge and period, coupons, and proration at several points of a period."""

import datetime

import pytest
import time_machine

from billing.models import SUCCEEDED, Charge, SandboxCharge, Subscription
from billing.plans import PLANS, get_coupon
from billing.services import add_months, prorate
from tests.factories import SubscriptionFactory

UTC = datetime.UTC
JAN_31 = datetime.datetime(2026, 1, 31, 10, 0, tzinfo=UTC)

# Written out by hand (not recomputed from the table): 3 seats × unit × months, and where the period ends
# when it starts on 31 January 2026 at 10:00.
EXPECTED = {
    "hd-team1m": (2900, 8700, "2026-02-28T10:00:00.000Z"),
    "hd-team3m": (2700, 24300, "2026-04-30T10:00:00.000Z"),
    "hd-team12m": (2400, 86400, "2027-01-31T10:00:00.000Z"),
    "hd-team36m": (1900, 205200, "2029-01-31T10:00:00.000Z"),
    "hd-enterprise1m": (5900, 17700, "2026-02-28T10:00:00.000Z"),
    "hd-enterprise3m": (5600, 50400, "2026-04-30T10:00:00.000Z"),
    "hd-enterprise6m": (5300, 95400, "2026-07-31T10:00:00.000Z"),
    "hd-enterprise12m": (4900, 176400, "2027-01-31T10:00:00.000Z"),
    "hd-enterprise24m": (4500, 324000, "2028-01-31T10:00:00.000Z"),
    "hd-enterprise36m": (4100, 442800, "2029-01-31T10:00:00.000Z"),
}


def test_the_table_has_the_ten_plan_codes_of_the_spec():
    assert sorted(PLANS) == sorted(EXPECTED)


def test_longer_periods_are_cheaper_per_month_and_enterprise_is_dearer_than_team():
    for tier in ("team", "enterprise"):
        plans = sorted((p for p in PLANS.values() if f"-{tier}" in p.code), key=lambda p: p.months)
        units = [p.unit_amount for p in plans]
        assert units == sorted(units, reverse=True) and len(set(units)) == len(units)
    assert max(p.unit_amount for p in PLANS.values() if "team" in p.code) < min(
        p.unit_amount for p in PLANS.values() if "enterprise" in p.code
    )


@pytest.mark.parametrize("plan_code", list(EXPECTED))
def test_it_charges_quantity_times_unit_times_months_for_every_plan(owner, plan_code):
    unit, total, period_end = EXPECTED[plan_code]
    # given
    with time_machine.travel(JAN_31, tick=False):
        # when
        response = owner.client.post(
            "/v1/subscriptions", {"planCode": plan_code, "quantity": 3}, format="json"
        )
    # then
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["state"] == "active"
    assert body["unitAmountInCents"] == unit
    assert body["currentPeriodStartedAt"] == "2026-01-31T10:00:00.000Z"
    assert body["currentPeriodEndsAt"] == period_end
    charge = Charge.objects.get()
    assert (charge.amount, charge.reason, charge.status) == (total, "create", SUCCEEDED)
    assert SandboxCharge.objects.get().amount == total


@pytest.mark.parametrize(
    ("coupon", "expected"),
    [("WELCOME10", 7830), ("halfoff", 4350), ("SAVE50", 3700), (None, 8700)],
)
def test_a_known_coupon_discounts_the_first_charge(owner, coupon, expected):
    # when
    body = {"planCode": "hd-team1m", "quantity": 3} | ({"couponCode": coupon} if coupon else {})
    response = owner.client.post("/v1/subscriptions", body, format="json")
    # then
    assert response.status_code == 201
    assert Charge.objects.get().amount == expected


def test_an_amount_coupon_never_makes_a_charge_negative():
    assert get_coupon("SAVE50").apply(1000) == 0


def test_an_unknown_coupon_is_a_400_naming_coupon_code(owner):
    # when
    response = owner.client.post(
        "/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 3, "couponCode": "NOPE"}, format="json"
    )
    # then
    assert response.status_code == 400
    assert "couponCode" in response.json()["details"]
    assert not Charge.objects.exists() and not Subscription.objects.exists()


def test_add_months_keeps_the_day_or_clamps_it_to_the_months_end():
    assert add_months(JAN_31, 1) == datetime.datetime(2026, 2, 28, 10, 0, tzinfo=UTC)
    assert add_months(datetime.datetime(2027, 12, 31, tzinfo=UTC), 2) == datetime.datetime(
        2028, 2, 29, tzinfo=UTC
    )
    assert add_months(datetime.datetime(2026, 5, 15, tzinfo=UTC), 36) == datetime.datetime(
        2029, 5, 15, tzinfo=UTC
    )


MARCH = datetime.datetime(2026, 3, 1, tzinfo=UTC)
APRIL = datetime.datetime(2026, 4, 1, tzinfo=UTC)  # a 31-day period


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (MARCH, 5800),  # the whole period is left
        (MARCH + datetime.timedelta(days=10), 3929),  # 21/31 of 5800 = 3929.03
        (MARCH + datetime.timedelta(days=15, hours=12), 2900),  # exactly half
        (APRIL - datetime.timedelta(hours=1), 8),  # 1/744 of 5800 = 7.8, rounded half up
        (APRIL - datetime.timedelta(seconds=1), 0),  # 0.002 cents
        (APRIL, 0),
        (APRIL + datetime.timedelta(days=3), 0),  # past the end
    ],
)
def test_prorate_charges_the_part_of_the_period_left_by_the_microsecond(now, expected):
    assert prorate(5800, started_at=MARCH, ends_at=APRIL, now=now) == expected


def _monthly_subscription(license, **kwargs):
    return SubscriptionFactory(
        license=license,
        plan_code=kwargs.pop("plan_code", "hd-team1m"),
        quantity=kwargs.pop("quantity", 5),
        activated_at=kwargs.pop("started_at", MARCH),
        current_period_ends_at=kwargs.pop("ends_at", APRIL),
        **kwargs,
    )


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (MARCH, 5800),
        (MARCH + datetime.timedelta(days=10), 3929),
        (MARCH + datetime.timedelta(days=15, hours=12), 2900),
        (APRIL - datetime.timedelta(hours=1), 8),
    ],
)
def test_two_more_seats_charge_the_prorated_difference(owner, now, expected):
    # given 5 seats of hd-team1m for March
    subscription = _monthly_subscription(owner.license)
    # when
    with time_machine.travel(now, tick=False):
        response = owner.client.patch(f"/v1/subscriptions/{subscription.pk}", {"quantity": 7}, format="json")
    # then
    assert response.status_code == 200, response.content
    assert response.json()["quantity"] == 7
    charge = Charge.objects.get()
    assert (charge.amount, charge.reason) == (expected, "quantity_increase")
    # the period does not move
    assert response.json()["currentPeriodEndsAt"] == "2026-04-01T00:00:00.000Z"


def test_more_seats_in_the_last_second_are_given_without_a_charge(owner):
    # given
    subscription = _monthly_subscription(owner.license)
    # when
    with time_machine.travel(APRIL - datetime.timedelta(seconds=1), tick=False):
        response = owner.client.patch(f"/v1/subscriptions/{subscription.pk}", {"quantity": 7}, format="json")
    # then
    assert response.status_code == 200
    assert response.json()["quantity"] == 7
    assert not Charge.objects.exists() and not SandboxCharge.objects.exists()


def test_a_dearer_plan_charges_the_prorated_difference_of_the_unit_over_the_period(owner):
    # given 2 seats of hd-team12m for 2026 (365 days)
    start = datetime.datetime(2026, 1, 1, tzinfo=UTC)
    subscription = _monthly_subscription(
        owner.license, plan_code="hd-team12m", quantity=2, started_at=start, ends_at=add_months(start, 12)
    )
    # when, 73 days in (292 of 365 days left)
    with time_machine.travel(datetime.datetime(2026, 3, 15, tzinfo=UTC), tick=False):
        response = owner.client.patch(
            f"/v1/subscriptions/{subscription.pk}", {"planCode": "hd-enterprise12m"}, format="json"
        )
    # then (4900 - 2400) × 2 seats × 12 months × 292/365
    assert response.status_code == 200, response.content
    assert response.json()["planCode"] == "hd-enterprise12m"
    assert response.json()["unitAmountInCents"] == 4900
    charge = Charge.objects.get()
    assert (charge.amount, charge.reason) == (48000, "upgrade")


def test_a_second_upgrade_in_the_same_period_charges_only_the_new_difference(owner):
    # given
    subscription = _monthly_subscription(owner.license)
    with time_machine.travel(MARCH, tick=False):
        owner.client.patch(f"/v1/subscriptions/{subscription.pk}", {"quantity": 7}, format="json")
        # when
        response = owner.client.patch(f"/v1/subscriptions/{subscription.pk}", {"quantity": 8}, format="json")
    # then
    assert response.status_code == 200
    assert sorted(Charge.objects.values_list("amount", flat=True)) == [2900, 5800]


def test_a_dearer_plan_with_fewer_seats_charges_the_rise_now_and_keeps_the_reduction_for_renewal(owner):
    # given
    subscription = _monthly_subscription(owner.license)
    # when
    with time_machine.travel(MARCH, tick=False):
        response = owner.client.patch(
            f"/v1/subscriptions/{subscription.pk}",
            {"planCode": "hd-enterprise1m", "quantity": 3},
            format="json",
        )
    # then: 5 seats × (5900 - 2900) now, 3 seats from the next period
    assert response.status_code == 200
    assert (response.json()["planCode"], response.json()["quantity"]) == ("hd-enterprise1m", 5)
    assert Charge.objects.get().amount == 15000
    subscription.refresh_from_db()
    assert subscription.pending_quantity == 3


@pytest.mark.parametrize("body", [{"quantity": 3}, {"planCode": "hd-team12m"}, {"quantity": 5}])
def test_a_cheaper_plan_or_fewer_seats_never_charge(owner, body):
    # given
    subscription = _monthly_subscription(owner.license)
    # when
    with time_machine.travel(MARCH + datetime.timedelta(days=3), tick=False):
        response = owner.client.patch(f"/v1/subscriptions/{subscription.pk}", body, format="json")
    # then the plan and seats stay for this period
    assert response.status_code == 200
    assert (response.json()["planCode"], response.json()["quantity"]) == ("hd-team1m", 5)
    assert not Charge.objects.exists() and not SandboxCharge.objects.exists()
