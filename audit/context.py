"""Authors for code that runs outside a request (the API and the admin set theirs in middleware, Celery
tasks in helpdesk/celery.py, commands run as the default `helpdeskSystem`)."""

from helpdesk.context import PAYMENT_PROVIDER, Actor, acting_as


def as_payment_provider():
    """`with as_payment_provider():` around the handling of a payment provider's event (webhook, renewal)."""
    return acting_as(Actor(type=PAYMENT_PROVIDER))
