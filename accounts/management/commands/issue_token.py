import json

from django.core.management.base import BaseCommand, CommandError

from accounts import services
from accounts.models import Account
from helpdesk.context import HELPDESK_SYSTEM, Actor, acting_as


class Command(BaseCommand):
    help = "Issue another personal access token for an account (the token is printed once)."

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True)
        parser.add_argument("--name", default="issue_token")
        parser.add_argument("--read-only", action="store_true", help="only the accounts--my:ro scope")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, email, name, read_only, **options):
        account = Account.objects.filter(email__iexact=email.strip()).first()
        if account is None:
            raise CommandError(f"No account with e-mail {email}")
        scopes = ["accounts--my:ro"] if read_only else None
        with acting_as(Actor(type=HELPDESK_SYSTEM)):
            _, token = services.token_issue(account=account, name=name, scopes=scopes)
        if options["json"]:
            self.stdout.write(json.dumps({"accountID": str(account.pk), "token": token}))
        else:
            self.stdout.write(f"accountID: {account.pk}\ntoken:     {token}  (shown once)")
