from django.apps import AppConfig


class TemplatesAppConfig(AppConfig):
    name = "templates_app"
    default_auto_field = "django.db.models.BigAutoField"
