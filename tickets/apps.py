from django.apps import AppConfig


class TicketsConfig(AppConfig):
    name = "tickets"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from tickets import models_purge  # noqa: F401 (the purge's models live beside tickets/models.py)
