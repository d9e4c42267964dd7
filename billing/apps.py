from django.apps import AppConfig


class BillingConfig(AppConfig):
    name = "billing"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Billing reacts to the accounts events (accounts never imports it): a trial, a seat per active agent.
        from accounts.signals import agent_activating, license_created
        from billing import seats, services
        from billing.api import licenses as license_api

        license_created.connect(services.on_license_created, dispatch_uid="billing.trial")
        agent_activating.connect(seats.on_agent_activating, dispatch_uid="billing.seats")
        license_api.register()  # the license documents' subscription, planCode and couponCode
        _register_webhooks()
        _register_audited()


def _register_audited():
    """Billing's audited model (audit/registry.py; audit, below this app, imports none of its models)."""
    from audit.registry import register
    from billing.models import PENDING, Subscription

    # The spec's targets have no subscriptions: a plan or seat change is a change of the license's account, so
    # it is recorded under `licenses` (entityName "hd-team1m × 3 (active)" tells it from the license itself).
    # charge_in_flight is the billing's own lock between the gateway call and the ledger, not a change.
    # A subscription waiting for its first charge (`pending`) is no change yet: it is recorded, created, when
    # the charge's outcome is applied (billing.services: the intent commits before the gateway call).
    register(
        Subscription,
        target="licenses",
        exclude=("charge_in_flight",),
        hidden=lambda subscription: subscription.state == PENDING,
    )


def _register_webhooks():
    """`subscriptions.create|update|delete` webhooks (tickets/webhooks/outbox.py), with the API's document."""
    from billing.api.serializers import SubscriptionSerializer
    from billing.models import Subscription
    from tickets.webhooks.outbox import register_resource

    register_resource(Subscription, prefix="subscriptions", serializer=SubscriptionSerializer)
