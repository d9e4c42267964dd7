from django.apps import AppConfig


class TemplatesAppConfig(AppConfig):
    name = "templates_app"
    verbose_name = "E-mail"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The e-mail app reacts to the tickets' events (tickets never imports it).
        from templates_app import notifications, rating, ticket_mail
        from templates_app.inbound import services as inbound
        from tickets.signals import message_created, rating_requested, ticket_assigned, tickets_purging

        message_created.connect(ticket_mail.on_message_created, dispatch_uid="templates_app.ticket_mail")
        message_created.connect(notifications.on_message_created, dispatch_uid="templates_app.notifications")
        ticket_assigned.connect(notifications.on_ticket_assigned, dispatch_uid="templates_app.notifications")
        rating_requested.connect(rating.on_rating_requested, dispatch_uid="templates_app.rating")
        tickets_purging.connect(
            ticket_mail.on_tickets_purging, dispatch_uid="templates_app.ticket_mail.purge"
        )
        tickets_purging.connect(inbound.on_tickets_purging, dispatch_uid="templates_app.inbound.purge")
        tickets_purging.connect(notifications.on_tickets_purging, dispatch_uid="templates_app.notifications")
