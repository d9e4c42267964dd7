"""The payment gateway: an interface, and a built-in sandbox that keeps its own ledger.

A gateway must be idempotent by key: calling `charge` again with a key it has seen returns the first
result and never takes money twice (as real providers do). Our ledger relies on this to finish a charge that
was interrupted between the gateway and our database. `settings.BILLING_GATEWAY` names the class.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Protocol

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.module_loading import import_string

SUCCEEDED, DECLINED, FAILED = "succeeded", "declined", "failed"


@dataclasses.dataclass(frozen=True)
class GatewayResult:
    status: str  # succeeded, declined (the card said no) or failed (the gateway refused the request)
    reference: str = ""
    message: str = ""

    @property
    def succeeded(self) -> bool:
        return self.status == SUCCEEDED


class GatewayUnavailable(Exception):
    """The gateway could not be reached or did not answer: the outcome is unknown, ask again with the same key."""


class PaymentGateway(Protocol):
    def charge(
        self, *, amount: int, currency: str, idempotency_key: str, license_id: int, description: str = ""
    ) -> GatewayResult: ...

    def refund(self, *, reference: str, amount: int, idempotency_key: str) -> GatewayResult: ...


class SandboxGateway:
    """Runs the whole flow without an outside service. Declines when `BILLING_SANDBOX_DECLINE` is on, or when
    the license's sandbox card is a declining test card (`set_sandbox_card(license_id, declines=True)`)."""

    def charge(self, *, amount, currency, idempotency_key, license_id, description=""):
        from billing.models import SandboxCard, SandboxCharge

        existing = SandboxCharge.objects.filter(idempotency_key=idempotency_key).first()
        if existing is not None:
            return self._replay(existing, amount, currency)
        declines = (
            settings.BILLING_SANDBOX_DECLINE
            or SandboxCard.objects.filter(license_id=license_id, declines=True).exists()
        )
        status, message = (DECLINED, "Your card was declined.") if declines else (SUCCEEDED, "")
        try:
            with transaction.atomic():
                row = SandboxCharge.objects.create(
                    idempotency_key=idempotency_key,
                    reference=f"sbx_ch_{uuid.uuid4().hex}",
                    license_id=license_id,
                    amount=amount,
                    currency=currency,
                    status=status,
                    message=message,
                )
        except IntegrityError:  # the same key at the same moment: the first one wins
            return self._replay(SandboxCharge.objects.get(idempotency_key=idempotency_key), amount, currency)
        return GatewayResult(row.status, row.reference, row.message)

    @staticmethod
    def _replay(row, amount, currency) -> GatewayResult:
        if (row.amount, row.currency) != (amount, currency):
            return GatewayResult(FAILED, "", "Idempotency key reused with a different amount.")
        return GatewayResult(row.status, row.reference, row.message)

    def refund(self, *, reference, amount, idempotency_key):
        from billing.models import SandboxCharge

        with transaction.atomic():
            row = (
                SandboxCharge.objects.select_for_update()
                .filter(reference=reference, status=SUCCEEDED)
                .first()
            )
            if row is not None and idempotency_key in row.refund_keys:
                return GatewayResult(SUCCEEDED, reference)  # this refund was already made
            if row is None or row.refunded_amount + amount > row.amount:
                return GatewayResult(FAILED, reference, "Nothing (or not that much) to refund.")
            row.refunded_amount += amount
            row.refund_keys = [*row.refund_keys, idempotency_key]
            row.save(update_fields=["refunded_amount", "refund_keys"])
        return GatewayResult(SUCCEEDED, reference)


def set_sandbox_card(license_id: int, *, declines: bool) -> None:
    from billing.models import SandboxCard

    SandboxCard.objects.update_or_create(license_id=license_id, defaults={"declines": declines})


def get_gateway() -> PaymentGateway:
    return import_string(settings.BILLING_GATEWAY)()
