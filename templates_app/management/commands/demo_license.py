"""The demo license of `make run` (here, above accounts: its output names the license's mail address)."""

import json
import shlex

from django.core.management.base import BaseCommand

from accounts import services
from accounts.models import Account, License, PersonalAccessToken
from helpdesk.context import HELPDESK_SYSTEM, Actor, acting_as
from templates_app.addresses import license_address

DEMO_EMAIL = "demo@helpdesk.localhost"
DEMO_TOKEN_NAME = "demo"


class Command(BaseCommand):
    help = (
        "Create the demo license if there is none yet, and print API credentials for its owner as export lines. "
        "Tokens are stored hashed, so the previous demo token cannot be shown again: it is revoked and a new one "
        "issued (one live demo token, however often `make run` runs)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default="http://127.0.0.1:8000", help="default: %(default)s")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead")

    def handle(self, *args, base_url, **options):
        with acting_as(Actor(type=HELPDESK_SYSTEM)):
            account = Account.objects.filter(email=DEMO_EMAIL).first()
            if account is None or not License.objects.filter(agents__account=account).exists():
                services.license_create(
                    owner_email=DEMO_EMAIL, owner_name="Demo Owner", company_name="Demo Inc."
                )
                account = Account.objects.get(email=DEMO_EMAIL)
            previous = PersonalAccessToken.objects.filter(
                account=account, name=DEMO_TOKEN_NAME, revoked_at__isnull=True
            )
            revoked = [services.token_revoke(token=token) for token in previous]
            _, token = services.token_issue(account=account, name=DEMO_TOKEN_NAME)
        license = License.objects.filter(agents__account=account).order_by("pk").first()
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "licenseID": license.pk,
                        "accountID": str(account.pk),
                        "token": token,
                        "revoked": len(revoked),
                    }
                )
            )
            return
        again = "The previous demo token was revoked; this" if revoked else "This"
        self.stdout.write(
            f"\nDemo license {license.pk} ({license.settings.get('companyName') or 'no name'}) ready. {again} token is shown once.\n"
            "Paste into your shell (docs/api.md uses these variables):\n\n"
            f"export HD={shlex.quote(base_url)} ACCOUNT_ID={account.pk} TOKEN={shlex.quote(token)}\n"
            'export AUTH="$ACCOUNT_ID:$TOKEN"\n\n'
            'Try it:  curl -u "$AUTH" $HD/v1/licenses\n'
            f"API docs: {base_url}/v1/docs   Admin: {base_url}/admin/ (manage.py createsuperuser)\n"
        )
        license = License.objects.filter(agents__account=account).order_by("pk").first()
        if license is not None:
            self.stdout.write(
                f"Its mail address (send to it through the SMTP listener below): {license_address(license.pk)}\n"
            )
