from django.apps import AppConfig


class TicketsConfig(AppConfig):
    name = "tickets"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from audit.capture import changes_recorded
        from tickets.signals import events_recorded
        from tickets.webhooks import outbox

        events_recorded.connect(outbox.on_events_recorded, dispatch_uid="tickets.webhooks.events")
        changes_recorded.connect(outbox.on_changes_recorded, dispatch_uid="tickets.webhooks.changes")
