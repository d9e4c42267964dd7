"""The subscriptions API: owners only, the spec's fields, filters, cancel and reactivate, the license's summary."""

import datetime

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from billing import services
from billing.models import REASON_REACTIVATION, Charge, SandboxCharge, Subscription
from tests.factories import SubscriptionFactory

UTC = datetime.UTC
# fields.json's "Subscription", in order.
SPEC_SUBSCRIPTION_FIELDS = [
    "state", "quantity", "subscriptionID", "licenseID", "planCode", "unitAmountInCents", "activatedAt",
    "cancelledAt", "expiresAt", "trialStartedAt", "trialEndsAt", "currentPeriodStartedAt", "currentPeriodEndsAt",
    "createdAt", "updatedAt",
]  # fmt: skip


def test_it_creates_a_subscription_with_exactly_the_spec_fields(owner):
    # when
    response = owner.client.post("/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 2}, format="json")
    # then
    assert response.status_code == 201
    body = response.json()
    assert list(body) == SPEC_SUBSCRIPTION_FIELDS
    assert body["licenseID"] == owner.license.pk
    assert body["cancelledAt"] is None and body["trialStartedAt"] is None
    assert body["activatedAt"].endswith("Z")


def test_it_lists_only_the_callers_subscriptions(owner, outsider):
    # given
    mine = SubscriptionFactory(license=owner.license)
    SubscriptionFactory(license=outsider.license)
    # when
    response = owner.client.get("/v1/subscriptions")
    # then
    assert response.status_code == 200
    assert [item["subscriptionID"] for item in response.json()] == [str(mine.pk)]


def test_it_filters_by_plan_codes_and_state(owner):
    # given
    team = SubscriptionFactory(license=owner.license, plan_code="hd-team1m")
    enterprise = SubscriptionFactory(license=owner.license, plan_code="hd-enterprise12m", state="expired")
    SubscriptionFactory(license=owner.license, plan_code="hd-team3m", state="expired")
    # when
    by_plans = owner.client.get("/v1/subscriptions?planCodes[]=hd-team1m&planCodes[]=hd-enterprise12m").json()
    by_state = owner.client.get("/v1/subscriptions?state=expired&planCodes[]=hd-enterprise12m").json()
    # then
    assert {item["subscriptionID"] for item in by_plans} == {str(team.pk), str(enterprise.pk)}
    assert [item["subscriptionID"] for item in by_state] == [str(enterprise.pk)]


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("planCodes[]=hd-gold", "planCodes[]"),
        ("planCodes[]=", "planCodes[]"),
        ("state=cancelled", "state"),
        ("state=", "state"),  # sent empty: not the same as left out
    ],
)
def test_an_invalid_filter_value_is_a_400_naming_it(owner, query, param):
    response = owner.client.get(f"/v1/subscriptions?{query}")
    assert response.status_code == 400
    assert param in response.json()["details"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"planCode": "hd-gold", "quantity": 1}, "planCode"),
        ({"planCode": "hd-team1m", "quantity": "3"}, "quantity"),
        ({"planCode": "hd-team1m", "quantity": 0}, "quantity"),
        ({"planCode": "hd-team1m"}, "quantity"),
        ({"planCode": "hd-team1m", "quantity": 1, "price": 1}, "price"),
    ],
)
def test_bad_create_bodies_are_400s_naming_the_field(owner, body, field):
    response = owner.client.post("/v1/subscriptions", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["details"]
    assert not Charge.objects.exists()


def test_a_second_subscription_is_a_409(owner):
    # given
    SubscriptionFactory(license=owner.license)
    # when
    response = owner.client.post("/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 2}, format="json")
    # then
    assert response.status_code == 409
    assert response.json()["code"] == "subscription_exists"
    assert not Charge.objects.exists()


@pytest.mark.parametrize("role", ["normal", "viewer"])
def test_only_owners_reach_billing(personas, role):
    # given
    client = personas[role].client
    subscription = SubscriptionFactory(license=personas["owner"].license)
    path = f"/v1/subscriptions/{subscription.pk}"
    # when
    responses = [
        client.get("/v1/subscriptions"),
        client.post("/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 9}, format="json"),
        client.patch(path, {"quantity": 9}, format="json"),
        client.post(f"{path}/cancel", {}, format="json"),
        client.post(f"{path}/reactivate", {}, format="json"),
    ]
    # then
    assert [r.status_code for r in responses] == [403] * 5
    assert {r.json()["code"] for r in responses} == {"permission_denied"}
    assert not Charge.objects.exists()


def test_an_outsider_gets_404_on_every_subscription_route(license, outsider):
    # given
    subscription = SubscriptionFactory(license=license)
    path = f"/v1/subscriptions/{subscription.pk}"
    # when
    responses = [
        outsider.client.patch(path, {"quantity": 9}, format="json"),
        outsider.client.post(f"{path}/cancel", {}, format="json"),
        outsider.client.post(f"{path}/reactivate", {}, format="json"),
    ]
    # then
    assert [r.status_code for r in responses] == [404] * 3
    subscription.refresh_from_db()
    assert (subscription.state, subscription.quantity) == ("active", 5)


def test_cancel_keeps_service_until_the_period_ends_and_charges_nothing(owner):
    # given
    subscription = SubscriptionFactory(license=owner.license)
    # when
    response = owner.client.post(f"/v1/subscriptions/{subscription.pk}/cancel")
    # then
    assert response.status_code == 200
    body = response.json()
    assert body["state"] == "canceled"
    assert body["cancelledAt"] is not None
    assert body["expiresAt"] == body["currentPeriodEndsAt"]
    assert not Charge.objects.exists()


def test_cancel_takes_no_body(owner):
    subscription = SubscriptionFactory(license=owner.license)
    response = owner.client.post(f"/v1/subscriptions/{subscription.pk}/cancel", {"now": True}, format="json")
    assert response.status_code == 400
    assert "now" in response.json()["details"]


def test_canceling_twice_is_a_409(owner):
    subscription = SubscriptionFactory(license=owner.license, state="canceled")
    response = owner.client.post(f"/v1/subscriptions/{subscription.pk}/cancel")
    assert response.status_code == 409
    assert response.json()["code"] == "subscription_not_active"


def test_a_canceled_subscription_cannot_be_changed_until_reactivated(owner):
    subscription = SubscriptionFactory(license=owner.license, state="canceled")
    response = owner.client.patch(f"/v1/subscriptions/{subscription.pk}", {"quantity": 9}, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "subscription_not_active"


def test_reactivating_within_the_period_is_free(owner):
    # given
    subscription = SubscriptionFactory(license=owner.license)
    owner.client.post(f"/v1/subscriptions/{subscription.pk}/cancel")
    # when
    response = owner.client.post(f"/v1/subscriptions/{subscription.pk}/reactivate")
    # then
    assert response.status_code == 200
    body = response.json()
    assert (body["state"], body["cancelledAt"], body["expiresAt"]) == ("active", None, None)
    assert not Charge.objects.exists()


def test_reactivating_an_expired_subscription_starts_a_new_period_and_charges_it(owner):
    # given a canceled subscription that ran out
    start = datetime.datetime(2026, 3, 1, tzinfo=UTC)
    subscription = SubscriptionFactory(
        license=owner.license,
        quantity=2,
        activated_at=start,
        current_period_ends_at=datetime.datetime(2026, 4, 1, tzinfo=UTC),
    )
    owner.client.post(f"/v1/subscriptions/{subscription.pk}/cancel")
    later = datetime.datetime(2026, 5, 10, tzinfo=UTC)
    with time_machine.travel(later, tick=False):
        services.subscription_renew(subscription_id=subscription.pk)
        assert Subscription.objects.get().state == "expired"
        # when
        response = owner.client.post(f"/v1/subscriptions/{subscription.pk}/reactivate")
    # then
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["state"] == "active"
    assert body["currentPeriodStartedAt"] == "2026-05-10T00:00:00.000Z"
    assert body["currentPeriodEndsAt"] == "2026-06-10T00:00:00.000Z"
    charge = Charge.objects.get()
    assert (charge.amount, charge.reason) == (2 * 2900, REASON_REACTIVATION)
    assert SandboxCharge.objects.count() == 1


def test_reactivating_an_active_subscription_is_a_409(owner):
    subscription = SubscriptionFactory(license=owner.license)
    response = owner.client.post(f"/v1/subscriptions/{subscription.pk}/reactivate")
    assert response.status_code == 409
    assert not Charge.objects.exists()


def test_the_license_carries_its_subscription(owner):
    # given
    subscription = SubscriptionFactory(license=owner.license, plan_code="hd-enterprise3m", quantity=4)
    # when
    listed = owner.client.get("/v1/licenses").json()[0]
    single = owner.client.get(f"/v1/licenses/{owner.license.pk}").json()
    # then
    expected = {
        "subscriptionID": str(subscription.pk),
        "state": "active",
        "planCode": "hd-enterprise3m",
        "quantity": 4,
        "currentPeriodEndsAt": single["subscription"]["currentPeriodEndsAt"],
    }
    assert listed["subscription"] == single["subscription"] == expected


def test_a_license_without_a_subscription_carries_null(owner):
    assert owner.client.get("/v1/licenses").json()[0]["subscription"] is None


def test_the_license_list_reads_subscriptions_in_one_query(owner):
    # given a caller who is an agent of three licenses, each with a subscription
    from tests.factories import AgentFactory, LicenseFactory

    SubscriptionFactory(license=owner.license)
    for _ in range(2):
        other = LicenseFactory()
        SubscriptionFactory(license=other)
        AgentFactory(license=other, account=owner.account, email=owner.account.email)
    # when
    with CaptureQueriesContext(connection) as queries:
        response = owner.client.get("/v1/licenses")
    # then
    assert len(response.json()) == 3
    assert all(item["subscription"]["state"] == "active" for item in response.json())
    assert sum("billing_subscription" in q["sql"] for q in queries.captured_queries) == 1


def test_a_trial_gives_seats_without_a_charge_and_a_subscription_replaces_it(owner):
    # given
    trial = services.subscription_start_trial(license=owner.license, plan_code="hd-team1m", quantity=3)
    assert (trial.state, trial.is_trial, trial.trial_ends_at is not None) == ("active", True, True)
    # when
    response = owner.client.post(
        "/v1/subscriptions", {"planCode": "hd-team12m", "quantity": 2}, format="json"
    )
    # then
    assert response.status_code == 201
    trial.refresh_from_db()
    assert trial.state == "expired"
    assert Charge.objects.get().amount == 2 * 2400 * 12
    # and the trial's expiry is in the audit log, within the new subscription's one entry
    from audit.models import AuditEntry

    assert not AuditEntry.objects.filter(object_id=trial.pk, action="update").exists()
    created = AuditEntry.objects.get(object_id=response.json()["subscriptionID"])
    replaced = created.changes["replacedTrial"]
    assert (replaced["before"]["state"], replaced["after"]["state"]) == ("active", "expired")
    assert replaced["after"]["ID"] == str(trial.pk)
    assert owner.client.get("/v1/licenses").json()[0]["subscription"]["planCode"] == "hd-team12m"


def test_a_subscription_with_charges_cannot_be_deleted(owner):
    # given
    from django.db.models import RestrictedError

    owner.client.post("/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 1}, format="json")
    subscription = Subscription.objects.get()
    # when / then
    with pytest.raises(RestrictedError):
        subscription.delete()
    assert Charge.objects.get().subscription == subscription


def test_a_trials_coupon_discounts_the_first_charge_when_it_converts(owner):
    # given a trial started with a coupon at license creation
    services.subscription_start_trial(license=owner.license, plan_code="hd-team1m", coupon_code="halfoff")
    # when
    response = owner.client.post("/v1/subscriptions", {"planCode": "hd-team1m", "quantity": 2}, format="json")
    # then
    assert response.status_code == 201
    assert Charge.objects.get().amount == 2900


def test_a_trial_with_an_unknown_coupon_is_refused_naming_coupon_code(owner):
    from helpdesk.errors import Invalid

    with pytest.raises(Invalid) as refused:
        services.subscription_start_trial(license=owner.license, plan_code="hd-team1m", coupon_code="NOPE")
    assert "couponCode" in refused.value.details
    assert not Subscription.objects.exists()


def test_the_list_costs_the_same_queries_for_one_or_many_subscriptions(owner, django_assert_num_queries):
    # given
    SubscriptionFactory(license=owner.license)
    owner.client.get("/v1/subscriptions")  # the token's first use of the minute is recorded once
    owner.client.get("/v1/subscriptions")  # the caller: served from its process's copy from the third request
    with CaptureQueriesContext(connection) as one:
        owner.client.get("/v1/subscriptions")
    for _ in range(5):
        SubscriptionFactory(license=owner.license, state="expired")
    # when / then
    with django_assert_num_queries(len(one.captured_queries)):
        response = owner.client.get("/v1/subscriptions")
    assert len(response.json()) == 6
