"""The admin app's configuration: SimpleAdminConfig (admin modules load with the URLs, helpdesk/urls.py) whose
`admin.site` is the console's site (accounts/console_site.py), imported lazily: nothing here imports a model."""

from django.contrib.admin.apps import SimpleAdminConfig


class ConsoleAdminConfig(SimpleAdminConfig):
    default_site = "accounts.console_site.ConsoleSite"
