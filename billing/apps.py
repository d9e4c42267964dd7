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
