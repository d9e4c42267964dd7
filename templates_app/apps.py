from django.apps import AppConfig


class TemplatesAppConfig(AppConfig):
    name = "templates_app"
    verbose_name = "E-mail"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from templates_app.inbound.services import on_tickets_purging
        from tickets.signals import tickets_purging

        tickets_purging.connect(on_tickets_purging, dispatch_uid="templates_app.inbound.purge")
