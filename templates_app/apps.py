from django.apps import AppConfig


class TemplatesAppConfig(AppConfig):
    name = "templates_app"
    verbose_name = "E-mail"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from templates_app.inbound.services import on_tickets_purging as forget_received_mail
        from templates_app.ticket_mail import on_message_created, on_tickets_purging
        from tickets.signals import message_created, tickets_purging

        message_created.connect(on_message_created, dispatch_uid="templates_app.ticket_mail")
        tickets_purging.connect(on_tickets_purging, dispatch_uid="templates_app.ticket_mail.purge")
        tickets_purging.connect(forget_received_mail, dispatch_uid="templates_app.inbound.purge")
