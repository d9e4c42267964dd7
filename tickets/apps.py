from django.apps import AppConfig


class TicketsConfig(AppConfig):
    name = "tickets"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from accounts.signals import agent_leaving
        from tickets.autoassign import on_agent_leaving

        agent_leaving.connect(on_agent_leaving, dispatch_uid="tickets.autoassign.agent_leaving")
