import json

from django.core.management.base import BaseCommand, CommandError

from accounts import services
from accounts.models import Account
from helpdesk.context import HELPDESK_SYSTEM, Actor, acting_as


class Command(BaseCommand):
    help = "Issue another personal access token for an account (the token is printed once)."

    def add_arguments(self, parser):
        parser.add_argument("--email", required=True)
        parser.add_argument("--name", default="issue_token", help="the token's name (default: %(default)s)")
        parser.add_argument("--read-only", action="store_true", help="only the accounts--my:ro scope")
        parser.add_argument(
            "--create",
            action="store_true",
            help="create the account when there is none: a new account, which then creates its license "
            "(POST /v1/licenses, docs/api.md 'Onboarding')",
        )
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, email, name, read_only, **options):
        with acting_as(Actor(type=HELPDESK_SYSTEM)):
            account = Account.objects.filter(email__iexact=email.strip()).first()
            if account is None and options["create"]:
                account = services.account_get_or_create(email=email.strip())
            if account is None:
                raise CommandError(f"No account with e-mail {email} (--create makes one)")
            scopes = ["accounts--my:ro"] if read_only else None
            _, token = services.token_issue(account=account, name=name, scopes=scopes)
        if options["json"]:
            self.stdout.write(json.dumps({"accountID": str(account.pk), "token": token}))
        else:
            self.stdout.write(
                f"Token for {account.email} (shown once):\n"
                f"export ACCOUNT_ID={account.pk} TOKEN={token}\n"
                'export AUTH="$ACCOUNT_ID:$TOKEN"'
            )
