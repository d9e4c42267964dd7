from django.apps import AppConfig


class TemplatesAppConfig(AppConfig):
    name = "templates_app"
    verbose_name = "E-mail"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from templates_app.ticket_mail import on_message_created, on_tickets_purging
        from tickets.signals import message_created, tickets_purging

        message_created.connect(on_message_created, dispatch_uid="templates_app.ticket_mail")
        tickets_purging.connect(on_tickets_purging, dispatch_uid="templates_app.ticket_mail.purge")

        from templates_app import notifications, rating
        from tickets.signals import rating_requested, ticket_assigned

        ticket_assigned.connect(notifications.on_ticket_assigned, dispatch_uid="templates_app.notifications")
        message_created.connect(notifications.on_message_created, dispatch_uid="templates_app.notifications")
        tickets_purging.connect(notifications.on_tickets_purging, dispatch_uid="templates_app.notifications")
        rating_requested.connect(rating.on_rating_requested, dispatch_uid="templates_app.rating")
