from django.apps import AppConfig


class TemplatesAppConfig(AppConfig):
    name = "templates_app"
    verbose_name = "E-mail"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from templates_app.ticket_mail import on_message_created
        from tickets.signals import message_created

        message_created.connect(on_message_created, dispatch_uid="templates_app.ticket_mail")
