from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from corsheaders.signals import check_request_enabled

        from accounts.api import (
            callers,
            schema,  # noqa: F401  (the OpenAPI security schemes of its authentication)
        )
        from accounts.oauth.cors import origin_allowed

        check_request_enabled.connect(origin_allowed, dispatch_uid="accounts.oauth.cors")
        callers.connect()
