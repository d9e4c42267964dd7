"""The audited models, one line each (the diff names follow the API's spelling).

Not audited, on purpose: personal access tokens and accounts. They are a person's identity, not data of
one license (an account may be an agent of several licenses, and the spec's targets name no tokens); a
token's hash must never reach a diff anyway. Add them here with `secrets=("token_hash",)` if that changes.
"""

from accounts.models import Agent, License, LicenseApp, Team
from audit.registry import register
from billing.models import PENDING, Subscription
from templates_app.models import BlockedSender, ReplyAddress, Template
from tickets.models import Tag
from tickets.webhooks.models import Webhook

# detectedLanguages is derived from tickets (updated as their languages are detected), not a change anyone made.
register(
    License,
    target="licenses",
    license_of=lambda license: license.pk,
    exclude=("detected_languages",),
)
register(
    Agent,
    target="agents",
    m2m={
        "teams": "teamIDs",
        "autoassignment_teams": "autoassignmentTeamIDs",
        "signature_attachments": "signature.attachments",
    },
    names={"signature_text": "signature.text", "signature_rich_text": "signature.richTextObj"},
    # which account an address belongs to is not the inviting license's to learn (issue 36, docs/api.md)
    exclude=("account",),
)
register(Team, target="teams", m2m={"autoassignment_agents": "autoassignmentAgentIDs"})
register(Template, target="emailTemplates", m2m={"attachments": "attachments"})
# The spec's targets have no subscriptions: a plan or seat change is a change of the license's account, so it
# is recorded under `licenses` (entityName "hd-team1m × 3 (active)" tells it from the license itself).
# charge_in_flight is the billing's own lock between the gateway call and the ledger, not a change.
# A subscription waiting for its first charge (`pending`) is no change yet: it is recorded, created, when the
# charge's outcome is applied (billing.services: the intent commits before the gateway call, for exactly-once).
register(
    Subscription,
    target="licenses",
    exclude=("charge_in_flight",),
    hidden=lambda subscription: subscription.state == PENDING,
)
register(Tag, target="tags")
register(ReplyAddress, target="replyAddresses")
# The secret is recorded only as changed; `status` (failing/active) is the deliveries' outcome, not a change.
register(Webhook, target="webhooks", secrets=("secret",), exclude=("status",))
register(BlockedSender, target="blockedEmails")

# OAuth apps (the developer console) under the spec's `integrations`: created, scopes changed, deleted (the entry
# names the app). Their name, client and redirect URIs live on django-oauth-toolkit's Application row, which is
# no license's data; grants are credentials, not audited for the reason tokens are not (above).
register(LicenseApp, target="integrations", exclude=("application",))
