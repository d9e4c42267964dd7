from django.apps import AppConfig


class TemplatesAppConfig(AppConfig):
    name = "templates_app"
    verbose_name = "E-mail"
    default_auto_field = "django.db.models.BigAutoField"
