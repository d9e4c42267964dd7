"""Plans, prices and coupons: the one table in code that every charge is computed from.

Prices are per agent per month, in cents. A longer commitment is cheaper per month, and every enterprise
price is above every team price, so "dearer" (a higher unit price) is a total order on plans.
"""

from __future__ import annotations

import dataclasses

from helpdesk.errors import field_error


@dataclasses.dataclass(frozen=True)
class Plan:
    code: str
    months: int
    unit_amount: int  # cents per agent per month

    def period_amount(self, quantity: int) -> int:
        """What one whole billing period of `quantity` seats costs."""
        return quantity * self.unit_amount * self.months

    def monthly_amount(self, quantity: int) -> int:
        return quantity * self.unit_amount


# code: (period months, cents per agent per month)
_PRICES = {
    "hd-team1m": (1, 2900),
    "hd-team3m": (3, 2700),
    "hd-team12m": (12, 2400),
    "hd-team36m": (36, 1900),
    "hd-enterprise1m": (1, 5900),
    "hd-enterprise3m": (3, 5600),
    "hd-enterprise6m": (6, 5300),
    "hd-enterprise12m": (12, 4900),
    "hd-enterprise24m": (24, 4500),
    "hd-enterprise36m": (36, 4100),
}

PLANS: dict[str, Plan] = {code: Plan(code, months, unit) for code, (months, unit) in _PRICES.items()}
PLAN_CODES = list(PLANS)


def get_plan(code: str, field: str = "planCode") -> Plan:
    try:
        return PLANS[code]
    except KeyError:
        raise field_error(field, f"'{code}' is not a plan code.", code="invalid_choice") from None


@dataclasses.dataclass(frozen=True)
class Coupon:
    code: str
    percent_off: int = 0
    amount_off: int = 0  # cents

    def apply(self, amount: int) -> int:
        """The amount left to pay (never below zero). A percentage discount is rounded down."""
        discounted = amount - amount * self.percent_off // 100 - self.amount_off
        return max(discounted, 0)


# A coupon discounts the charge of the request that carries it (create, upgrade, reactivation), not renewals.
COUPONS: dict[str, Coupon] = {
    "WELCOME": Coupon("WELCOME", percent_off=20),
    "WELCOME10": Coupon("WELCOME10", percent_off=10),
    "HALFOFF": Coupon("HALFOFF", percent_off=50),
    "SAVE50": Coupon("SAVE50", amount_off=5000),
}


def get_coupon(code: str | None) -> Coupon | None:
    if not code:
        return None
    try:
        return COUPONS[code.strip().upper()]
    except KeyError:
        raise field_error(
            "couponCode", f"'{code}' is not a valid coupon code.", code="invalid_coupon"
        ) from None
