from django.apps import AppConfig


class TicketsConfig(AppConfig):
    name = "tickets"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Tickets react to the changes of the apps below them (accounts, audit) through their signals.
        from accounts.signals import agent_leaving
        from audit.capture import changes_recorded
        from tickets.autoassign import on_agent_leaving
        from tickets.signals import events_recorded
        from tickets.webhooks import outbox

        events_recorded.connect(outbox.on_events_recorded, dispatch_uid="tickets.webhooks.events")
        changes_recorded.connect(outbox.on_changes_recorded, dispatch_uid="tickets.webhooks.changes")
        agent_leaving.connect(on_agent_leaving, dispatch_uid="tickets.autoassign.agent_leaving")
