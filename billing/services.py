"""Writes of billing: subscriptions and the charges that pay for them. Every change of money goes through here.

How a charge happens exactly once (the same steps for create, upgrade, reactivation, renewal and reconciliation):

1. Transaction 1 locks the license row (creates, seat checks) and the subscription row (`select_for_update`),
   decides the change and its price, writes a `Charge` in status `intent` with the gateway's idempotency key,
   marks the subscription `charge_in_flight`, and commits. From here a crash leaves a findable intent.
2. The gateway is called with no transaction and no row lock held: a slow gateway must not hold database locks
   or connections, and the row lock could not survive the commit of step 1 anyway. Other changes of the same
   subscription meanwhile see `charge_in_flight` under their own row lock and get 409 `charge_in_progress`:
   two requests can never both charge for the same difference.
3. Transaction 2 locks the charge row, returns if it is no longer an intent (someone finished it), applies the
   change on success or leaves the subscription unchanged on a decline, clears `charge_in_flight`, and writes
   the idempotency record's response, all atomically.

If the process dies between 2 and 3, `charges_reconcile` (a periodic task) calls the gateway again with the same
key; the gateway answers with the first result and takes no money, and step 3 runs.

Proration: a rise in the monthly price (seats × unit) is charged for the rest of the current period:
`(new monthly − old monthly) × months of the period × remaining / period length`, remaining and length
measured in microseconds, rounded half up to the cent. A cheaper plan or fewer seats never charge: they are
kept as `pending_*` and applied at the next renewal.
"""

from __future__ import annotations

import calendar
import datetime
import uuid

from django.conf import settings
from django.db import IntegrityError
from django.db.models import Q
from django.utils import timezone

from accounts.models import STATUS_ACTIVE, Agent, License
from accounts.services import stamp_create, stamp_update
from audit.capture import record_within
from billing import idempotency
from billing.gateway import GatewayResult, GatewayUnavailable, get_gateway
from billing.models import (
    ACTIVE,
    CANCELED,
    DECLINED,
    EXPIRED,
    FAILED,
    INTENT,
    PENDING,
    REASON_CREATE,
    REASON_QUANTITY,
    REASON_REACTIVATION,
    REASON_RENEWAL,
    REASON_UPGRADE,
    SUCCEEDED,
    Charge,
    IdempotencyRecord,
    Subscription,
)
from billing.plans import PLANS, Plan, get_coupon, get_plan
from helpdesk.errors import Conflict, PaymentRequired, Unavailable
from helpdesk.timestamps import iso
from helpdesk.transactions import unit_of_work


class PaymentGatewayUnavailable(Unavailable):
    code = "payment_gateway_unavailable"


# --- arithmetic -----------------------------------------------------------------------------------------


def add_months(moment: datetime.datetime, months: int) -> datetime.datetime:
    """The same day and time `months` later; the 31st becomes the month's last day when it is shorter."""
    month_index = moment.month - 1 + months
    year, month = moment.year + month_index // 12, month_index % 12 + 1
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return moment.replace(year=year, month=month, day=day)


def _microseconds(delta: datetime.timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def prorate(amount: int, *, started_at, ends_at, now) -> int:
    """`amount` (the price of a whole period) for the part of the period that is left, rounded half up."""
    total = _microseconds(ends_at - started_at)
    if amount <= 0 or total <= 0:
        return 0
    remaining = min(max(_microseconds(ends_at - now), 0), total)
    return (2 * amount * remaining + total) // (2 * total)


def upgrade_amount(subscription: Subscription, plan: Plan, quantity: int, now) -> int:
    """What moving `subscription` to `plan` × `quantity` now costs for the rest of its period (0 if cheaper)."""
    unit = subscription.unit_amount_in_cents if plan.code == subscription.plan_code else plan.unit_amount
    monthly_rise = unit * quantity - subscription.unit_amount_in_cents * subscription.quantity
    return prorate(
        monthly_rise * subscription.period_months,
        started_at=subscription.current_period_started_at,
        ends_at=subscription.current_period_ends_at,
        now=now,
    )


# --- checks ---------------------------------------------------------------------------------------------


def _lock_license(license: License) -> License:
    return License.objects.select_for_update(no_key=True).get(pk=license.pk)


def active_agent_count(license: License) -> int:
    return Agent.objects.for_license(license).filter(status=STATUS_ACTIVE).count()


def _check_seats_cover_agents(license: License, quantity: int) -> None:
    agents = active_agent_count(license)
    if quantity < agents:
        raise Conflict(
            f"The license has {agents} active agents, so the quantity cannot be below {agents}. "
            "Deactivate agents first.",
            code="seats_in_use",
            details={"quantity": quantity, "activeAgents": agents},
        )


def _refuse_if_busy(subscription: Subscription) -> None:
    if subscription.charge_in_flight_id is not None:
        raise Conflict(
            "A payment for this subscription is being processed; retry in a moment.",
            code="charge_in_progress",
            retry_after=1,
        )


def _current_subscription(license: License) -> Subscription | None:
    return (
        Subscription.objects.for_license(license)
        .filter(state__in=[ACTIVE, CANCELED, PENDING])
        .order_by("-created_at")
        .first()
    )


def _gateway_key(license: License, *parts) -> str:
    """The key the gateway sees: one per charge intent (the intent row keeps it for the reconciler), or, for a
    renewal, derived from the period, so that two renewal runs cannot both charge one period."""
    return ":".join([str(license.pk), *map(str, parts or ["charge", uuid.uuid4()])])


# --- responses (written with the change, for Idempotency-Key replays) -----------------------------------


def _respond(request: IdempotencyRecord | None, subscription: Subscription, *, created: bool = False) -> None:
    if request is not None:
        idempotency.complete_subscription(request, subscription, created=created)


# --- charging -------------------------------------------------------------------------------------------


def _record_intent(
    subscription: Subscription, *, amount: int, reason: str, change: dict, key: str, request=None
) -> Charge:
    """Step 1 (inside the caller's transaction): the charge intent and the in-flight mark."""
    charge = Charge.objects.create(
        license_id=subscription.license_id,
        subscription=subscription,
        amount=amount,
        currency=settings.BILLING_CURRENCY,
        reason=reason,
        change=change,
        idempotency_key=key,
        request=request,
    )
    subscription.charge_in_flight = charge
    subscription.save(update_fields=["charge_in_flight"])
    return charge


def _call_gateway(charge: Charge) -> GatewayResult:
    """Step 2: no transaction, no lock. Same arguments every time for the same charge."""
    return get_gateway().charge(
        amount=charge.amount,
        currency=charge.currency,
        idempotency_key=charge.idempotency_key,
        license_id=charge.license_id,
        description=f"{charge.reason} of subscription {charge.subscription_id}",
    )


def _decline_error(result: GatewayResult) -> PaymentRequired:
    if result.status == DECLINED:
        return PaymentRequired(result.message or "The card was declined.", code="card_declined")
    return PaymentRequired(result.message or "The payment failed.", code="payment_failed")


def _apply_period(subscription: Subscription, plan: Plan, quantity: int, started_at) -> None:
    subscription.plan_code = plan.code
    subscription.quantity = quantity
    subscription.unit_amount_in_cents = plan.unit_amount
    subscription.period_months = plan.months
    subscription.current_period_started_at = started_at
    subscription.current_period_ends_at = add_months(started_at, plan.months)
    subscription.pending_plan_code = ""
    subscription.pending_quantity = None


def _activate(subscription: Subscription, plan: Plan, quantity: int, now) -> None:
    _apply_period(subscription, plan, quantity, now)
    subscription.state = ACTIVE
    subscription.activated_at = now
    subscription.cancelled_at = None
    subscription.expires_at = None
    subscription.is_trial = False


def _apply_change(subscription: Subscription, change: dict) -> None:
    """A mid-period change: the period stays, the plan and seats change now, lower wishes wait for renewal."""
    if change["plan_code"] != subscription.plan_code:
        subscription.plan_code = change["plan_code"]
        subscription.unit_amount_in_cents = PLANS[change["plan_code"]].unit_amount
    subscription.quantity = change["quantity"]
    subscription.pending_plan_code = change["pending_plan_code"]
    subscription.pending_quantity = change["pending_quantity"]


def _expire_replaced_trial(subscription: Subscription, now) -> None:
    # One save per row (never QuerySet.update): each expiry is an audited change.
    trials = Subscription.objects.for_license(subscription.license_id).filter(
        is_trial=True, state__in=[ACTIVE, CANCELED]
    )
    for trial in trials.exclude(pk=subscription.pk):
        # Part of the new subscription's one entry (`replacedTrial`), not an entry of its own.
        record_within(trial, owner=subscription, name="replacedTrial")
        trial.state, trial.expires_at, trial.updated_at = EXPIRED, now, now
        trial.save(update_fields=["state", "expires_at", "updated_at"])


def _apply_paid(subscription: Subscription, charge: Charge, now) -> bool:
    """The change a succeeded charge paid for; True when it created the subscription (the request's 201)."""
    change = charge.change
    if charge.reason in (REASON_CREATE, REASON_REACTIVATION):
        _activate(subscription, PLANS[change["plan_code"]], change["quantity"], now)
        _expire_replaced_trial(subscription, now)
        return charge.reason == REASON_CREATE
    if charge.reason == REASON_RENEWAL:
        started_at = datetime.datetime.fromisoformat(change["period_started_at"])
        _apply_period(subscription, PLANS[change["plan_code"]], change["quantity"], started_at)
        return False
    _apply_change(subscription, change)
    return False


def _apply_unpaid(subscription: Subscription, charge: Charge, now) -> None:
    """A declined charge: a request changes nothing; a failed first charge or renewal ends the service."""
    if charge.reason == REASON_CREATE:
        subscription.state = EXPIRED
        subscription.expires_at = now
    elif charge.reason == REASON_RENEWAL:
        subscription.state = EXPIRED
        subscription.expires_at = subscription.current_period_ends_at


def _complete_charge(charge_id, result: GatewayResult) -> tuple[Subscription, Charge]:
    """Step 3: record the gateway's answer and apply what it paid for, once."""
    with unit_of_work():
        charge = Charge.objects.select_for_update().get(pk=charge_id)
        subscription = Subscription.objects.select_for_update().get(pk=charge.subscription_id)
        if charge.status != INTENT:
            return subscription, charge
        now = timezone.now()
        charge.gateway_reference = result.reference
        charge.completed_at = now
        if result.succeeded:
            charge.status = SUCCEEDED
            created, error = _apply_paid(subscription, charge, now), None
        else:
            charge.status = DECLINED if result.status == DECLINED else FAILED
            charge.failure_message = result.message[:500]
            _apply_unpaid(subscription, charge, now)
            created, error = False, _decline_error(result)
        charge.save()
        subscription.charge_in_flight = None
        if result.succeeded or charge.reason in (REASON_CREATE, REASON_RENEWAL):
            stamp_update(subscription)  # a declined change leaves even updatedAt as it was
        subscription.save()
        if charge.request_id is not None and error is not None:
            idempotency.complete_error(charge.request, error)
        elif charge.request_id is not None:
            idempotency.complete_subscription(charge.request, subscription, created=created)
    return subscription, charge


def _charge_now(charge: Charge) -> Subscription:
    """Steps 2 and 3 for a request: a decline is a 402, an unreachable gateway a 503 (the intent stays)."""
    try:
        result = _call_gateway(charge)
    except GatewayUnavailable:
        raise PaymentGatewayUnavailable(
            "The payment provider did not answer; the payment will be confirmed or released shortly. "
            "Retry with the same Idempotency-Key to see the outcome.",
            retry_after=30,
        ) from None
    subscription, charge = _complete_charge(charge.pk, result)
    if charge.status != SUCCEEDED:
        raise _decline_error(GatewayResult(charge.status, charge.gateway_reference, charge.failure_message))
    return subscription


# --- operations -----------------------------------------------------------------------------------------


def subscription_start_trial(
    *, license: License, plan_code: str, quantity: int | None = None, coupon_code: str = ""
) -> Subscription:
    """A free trial (no charge) for a new license; it expires at its end unless a subscription is created.

    `quantity` defaults to BILLING_TRIAL_SEATS. A known `coupon_code` (unknown: 400 naming couponCode) is kept
    and discounts the first charge when the trial becomes a subscription.
    """
    plan = get_plan(plan_code)
    coupon = get_coupon(coupon_code)
    now = timezone.now()
    ends_at = now + datetime.timedelta(days=settings.BILLING_TRIAL_DAYS)
    with unit_of_work():
        _lock_license(license)
        if _current_subscription(license) is not None:
            raise Conflict("The license already has a subscription.", code="subscription_exists")
        subscription = Subscription(
            license=license,
            state=ACTIVE,
            plan_code=plan.code,
            quantity=quantity or settings.BILLING_TRIAL_SEATS,
            unit_amount_in_cents=plan.unit_amount,
            period_months=plan.months,
            is_trial=True,
            coupon_code=coupon.code if coupon else "",
            activated_at=now,
            trial_started_at=now,
            trial_ends_at=ends_at,
            expires_at=ends_at,
            current_period_started_at=now,
            current_period_ends_at=ends_at,
        )
        stamp_create(subscription)
        subscription.save()
    return subscription


DEFAULT_TRIAL_PLAN = "hd-team1m"  # licenses made without a plan (operator commands, the admin) try this one


def on_license_created(sender, *, license: License, plan_code=None, coupon_code: str = "", **kwargs) -> None:
    """Receiver of accounts.signals.license_created: a new license starts a trial (in its transaction)."""
    subscription_start_trial(
        license=license, plan_code=plan_code or DEFAULT_TRIAL_PLAN, coupon_code=coupon_code
    )


def subscription_create(
    *,
    license: License,
    plan_code: str,
    quantity: int,
    coupon_code: str | None = None,
    request: IdempotencyRecord | None = None,
) -> Subscription:
    """Charge `quantity × unit × months` (less the coupon), then activate. A running trial is replaced."""
    plan, coupon = get_plan(plan_code), get_coupon(coupon_code)
    now = timezone.now()
    with unit_of_work():
        _lock_license(license)
        current = _current_subscription(license)
        if current is not None and not current.is_trial:
            raise Conflict(
                "The license already has a subscription; change it instead.",
                code="subscription_exists",
                details={"subscriptionID": str(current.pk)},
            )
        if coupon is None and current is not None and current.coupon_code:
            coupon = get_coupon(current.coupon_code)
        _check_seats_cover_agents(license, quantity)
        subscription = Subscription(
            license=license,
            state=PENDING,
            plan_code=plan.code,
            quantity=quantity,
            unit_amount_in_cents=plan.unit_amount,
            period_months=plan.months,
            current_period_started_at=now,
            current_period_ends_at=add_months(now, plan.months),
        )
        stamp_create(subscription)
        subscription.save()
        amount = plan.period_amount(quantity)
        amount = coupon.apply(amount) if coupon else amount
        if amount == 0:
            _activate(subscription, plan, quantity, now)
            _expire_replaced_trial(subscription, now)
            subscription.save()
            _respond(request, subscription, created=True)
            return subscription
        charge = _record_intent(
            subscription,
            amount=amount,
            reason=REASON_CREATE,
            change={"plan_code": plan.code, "quantity": quantity},
            key=_gateway_key(license),
            request=request,
        )
    return _charge_now(charge)


def subscription_update(
    *,
    subscription: Subscription,
    plan_code: str | None = None,
    quantity: int | None = None,
    coupon_code: str | None = None,
    request: IdempotencyRecord | None = None,
) -> Subscription:
    """A dearer plan or more seats: charged (prorated) and applied now. Cheaper or fewer: at the next renewal.

    A request that is both (a dearer plan with fewer seats) splits: the rise now, the reduction later.
    """
    plan = get_plan(plan_code) if plan_code is not None else None
    coupon = get_coupon(coupon_code)
    with unit_of_work():
        license = _lock_license(subscription.license)
        subscription = Subscription.objects.select_for_update().get(pk=subscription.pk)
        _refuse_if_busy(subscription)
        if subscription.state != ACTIVE:
            raise Conflict(
                f"A {subscription.state} subscription cannot be changed"
                + ("; reactivate it first." if subscription.state in (CANCELED, EXPIRED) else "."),
                code="subscription_not_active",
            )
        if subscription.is_trial:
            raise Conflict(
                "A trial cannot be changed; create a subscription (POST /v1/subscriptions) to choose a plan.",
                code="trial_subscription",
            )
        if subscription.current_period_ends_at <= timezone.now():
            # Prorating over an ended period would give the change away for free until the renewal.
            raise Conflict(
                "The subscription's period has ended and it is being renewed; retry in a few minutes.",
                code="renewal_due",
                retry_after=60,
            )
        target_plan = plan or PLANS[subscription.pending_plan_code or subscription.plan_code]
        target_quantity = (
            quantity if quantity is not None else (subscription.pending_quantity or subscription.quantity)
        )
        _check_seats_cover_agents(license, target_quantity)
        dearer = target_plan.unit_amount > subscription.unit_amount_in_cents
        now_plan = target_plan if dearer else PLANS[subscription.plan_code]
        now_quantity = max(target_quantity, subscription.quantity)
        change = {
            "plan_code": now_plan.code,
            "quantity": now_quantity,
            "pending_plan_code": "" if target_plan.code == now_plan.code else target_plan.code,
            "pending_quantity": None if target_quantity == now_quantity else target_quantity,
        }
        now = timezone.now()
        amount = upgrade_amount(subscription, now_plan, now_quantity, now)
        amount = coupon.apply(amount) if coupon else amount
        if amount == 0:
            _apply_change(subscription, change)
            stamp_update(subscription)
            subscription.save()
            _respond(request, subscription)
            return subscription
        charge = _record_intent(
            subscription,
            amount=amount,
            reason=REASON_UPGRADE if now_plan.code != subscription.plan_code else REASON_QUANTITY,
            change=change,
            key=_gateway_key(license),
            request=request,
        )
    return _charge_now(charge)


@unit_of_work
def subscription_cancel(
    *, subscription: Subscription, request: IdempotencyRecord | None = None
) -> Subscription:
    """No charge and no refund: service continues until the period ends, then the subscription expires."""
    subscription = Subscription.objects.select_for_update().get(pk=subscription.pk)
    _refuse_if_busy(subscription)
    if subscription.state != ACTIVE:
        raise Conflict(
            f"A {subscription.state} subscription cannot be canceled.", code="subscription_not_active"
        )
    subscription.state = CANCELED
    subscription.cancelled_at = timezone.now()
    subscription.expires_at = subscription.current_period_ends_at
    stamp_update(subscription)
    subscription.save()
    _respond(request, subscription)
    return subscription


def subscription_reactivate(
    *, subscription: Subscription, request: IdempotencyRecord | None = None
) -> Subscription:
    """Canceled and still in its period: active again, no charge. Expired: a new period, charged in full."""
    with unit_of_work():
        license = _lock_license(subscription.license)
        subscription = Subscription.objects.select_for_update().get(pk=subscription.pk)
        _refuse_if_busy(subscription)
        now = timezone.now()
        if subscription.state == CANCELED and subscription.current_period_ends_at > now:
            subscription.state = ACTIVE
            subscription.cancelled_at = None
            subscription.expires_at = subscription.trial_ends_at if subscription.is_trial else None
            stamp_update(subscription)
            subscription.save()
            _respond(request, subscription)
            return subscription
        if subscription.state not in (CANCELED, EXPIRED):
            raise Conflict(
                f"A {subscription.state} subscription cannot be reactivated.", code="subscription_not_active"
            )
        current = _current_subscription(license)
        if current is not None and current.pk != subscription.pk and not current.is_trial:
            raise Conflict(
                "The license has another subscription; change that one instead.",
                code="subscription_exists",
                details={"subscriptionID": str(current.pk)},
            )
        plan = PLANS[subscription.pending_plan_code or subscription.plan_code]
        quantity = subscription.pending_quantity or subscription.quantity
        _check_seats_cover_agents(license, quantity)
        charge = _record_intent(
            subscription,
            amount=plan.period_amount(quantity),
            reason=REASON_REACTIVATION,
            change={"plan_code": plan.code, "quantity": quantity},
            key=_gateway_key(license),
            request=request,
        )
    return _charge_now(charge)


def subscription_renew(*, subscription_id) -> Subscription | None:
    """At the period's end: renew an active subscription with one charge (pending reductions apply now);
    expire a canceled one or a trial. A declined renewal expires the subscription. Safe to run twice."""
    with unit_of_work():
        subscription = Subscription.objects.select_for_update().filter(pk=subscription_id).first()
        now = timezone.now()
        if (
            subscription is None
            or subscription.charge_in_flight_id
            or subscription.current_period_ends_at > now
        ):
            return subscription
        if subscription.state == CANCELED or (subscription.state == ACTIVE and subscription.is_trial):
            subscription.state = EXPIRED
            subscription.expires_at = subscription.current_period_ends_at
            stamp_update(subscription)
            subscription.save()
            return subscription
        if subscription.state != ACTIVE:
            return subscription
        plan = PLANS[subscription.pending_plan_code or subscription.plan_code]
        quantity = subscription.pending_quantity or subscription.quantity
        period_started_at = subscription.current_period_ends_at
        key = _gateway_key(subscription.license, "renewal", subscription.pk, iso(period_started_at))
        try:
            with unit_of_work():
                charge = _record_intent(
                    subscription,
                    amount=plan.period_amount(quantity),
                    reason=REASON_RENEWAL,
                    change={
                        "plan_code": plan.code,
                        "quantity": quantity,
                        "period_started_at": period_started_at.isoformat(),
                    },
                    key=key,
                )
        except IntegrityError:  # this period was already charged for
            return subscription
    try:
        result = _call_gateway(charge)
    except GatewayUnavailable:
        return subscription  # the reconciler asks again with the same key
    return _complete_charge(charge.pk, result)[0]


def charge_reconcile(*, charge_id) -> Charge | None:
    """Finish an intent left behind (a crash or timeout after step 1): same key, so never a second charge."""
    charge = Charge.objects.filter(pk=charge_id, status=INTENT).first()
    if charge is None:
        return None
    try:
        result = _call_gateway(charge)
    except GatewayUnavailable:
        return charge
    return _complete_charge(charge.pk, result)[1]


def idempotency_records_purge(
    *, older_than: datetime.timedelta, open_older_than: datetime.timedelta, batch=1000
) -> int:
    """Forget keys: answered ones after `older_than`; open ones after `open_older_than` when their request
    died before recording a charge (nothing to finish). Keys of unfinished charges stay."""
    now = timezone.now()
    old = Q(created_at__lt=now - older_than) | Q(status__isnull=True, created_at__lt=now - open_older_than)
    ids = list(
        IdempotencyRecord.objects.filter(old)
        .exclude(charges__status=INTENT)
        .values_list("pk", flat=True)[:batch]
    )
    IdempotencyRecord.objects.filter(pk__in=ids).delete()
    return len(ids)
