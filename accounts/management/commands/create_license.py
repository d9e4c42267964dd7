import json

from django.core.management.base import BaseCommand

from accounts import services
from helpdesk.context import HELPDESK_SYSTEM, Actor, acting_as


class Command(BaseCommand):
    help = "Create a license with its default team and an active owner, and issue a token for the owner."

    def add_arguments(self, parser):
        parser.add_argument("--owner-email", required=True)
        parser.add_argument("--owner-name", default="")
        parser.add_argument("--company", default="")
        parser.add_argument("--json", action="store_true", help="print {licenseID, accountID, token} as JSON")

    def handle(self, *args, owner_email, owner_name, company, **options):
        with acting_as(Actor(type=HELPDESK_SYSTEM)):
            license = services.license_create(
                owner_email=owner_email, owner_name=owner_name, company_name=company
            )
            owner = license.agents.get()
            _, token = services.token_issue(account=owner.account, name="create_license")
        result = {"licenseID": license.pk, "accountID": str(owner.account_id), "token": token}
        if options["json"]:
            self.stdout.write(json.dumps(result))
        else:
            self.stdout.write(
                f"License {license.pk} created for {owner.email}.\n"
                f"accountID: {result['accountID']}\ntoken:     {token}  (shown once)"
            )
