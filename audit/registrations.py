"""The audited models, one line each (the diff names follow the API's spelling).

Not audited, on purpose: personal access tokens and accounts. They are a person's identity, not data of
one license (an account may be an agent of several licenses, and the spec's targets name no tokens); a
token's hash must never reach a diff anyway. Add them here with `secrets=("token_hash",)` if that changes.
"""

from accounts.models import Agent, License, Team
from audit.registry import register
from billing.models import Subscription
from templates_app.models import BlockedSender, Template
from tickets.models import Tag

# detectedLanguages is derived from tickets (updated as their languages are detected), not a change anyone made.
register(License, target="licenses", license_of=lambda license: license.pk, exclude=("detected_languages",))
register(
    Agent,
    target="agents",
    m2m={
        "teams": "teamIDs",
        "autoassignment_teams": "autoassignmentTeamIDs",
        "signature_attachments": "signature.attachments",
    },
    names={"signature_text": "signature.text", "signature_rich_text": "signature.richTextObj"},
)
register(Team, target="teams", m2m={"autoassignment_agents": "autoassignmentAgentIDs"})
register(Template, target="emailTemplates", m2m={"attachments": "attachments"})
# The spec's targets have no subscriptions: a plan or seat change is a change of the license's account, so it
# is recorded under `licenses` (entityName "hd-team1m × 3 (active)" tells it from the license itself).
# charge_in_flight is the billing's own lock between the gateway call and the ledger, not a change.
register(Subscription, target="licenses", exclude=("charge_in_flight",))
register(Tag, target="tags")
register(BlockedSender, target="blockedEmails")
