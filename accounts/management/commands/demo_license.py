import json

from django.core.management.base import BaseCommand

from accounts import services
from accounts.models import Account, License
from helpdesk.context import HELPDESK_SYSTEM, Actor, acting_as

DEMO_EMAIL = "demo@helpdesk.localhost"


class Command(BaseCommand):
    help = "Create the demo license if there is none yet, and print fresh API credentials for its owner."

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, base_url, **options):
        with acting_as(Actor(type=HELPDESK_SYSTEM)):
            account = Account.objects.filter(email=DEMO_EMAIL).first()
            if account is None or not License.objects.filter(agents__account=account).exists():
                services.license_create(
                    owner_email=DEMO_EMAIL, owner_name="Demo Owner", company_name="Demo Inc."
                )
                account = Account.objects.get(email=DEMO_EMAIL)
            _, token = services.token_issue(account=account, name="demo")
        if options["json"]:
            self.stdout.write(json.dumps({"accountID": str(account.pk), "token": token}))
            return
        self.stdout.write(
            "\nDemo license ready. API credentials (the token is shown once):\n"
            f"  accountID: {account.pk}\n  token:     {token}\n\n"
            f"Try it:\n  curl -u {account.pk}:{token} {base_url}/v1/licenses\n"
            f"API docs: {base_url}/v1/docs\n"
        )
        license = License.objects.filter(agents__account=account).order_by("pk").first()
        if license is not None:
            from templates_app.addresses import license_address

            self.stdout.write(
                f"Its mail address (make run receives on port 2525): {license_address(license.pk)}\n"
            )
