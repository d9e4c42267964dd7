"""The audited models of accounts, the base below audit, one line each (the diff names follow the API's spelling).
The apps above audit register their own from their AppConfig.ready() (billing/apps.py, tickets/apps.py,
templates_app/apps.py): audit imports none of them.

Not audited, on purpose: personal access tokens and accounts. They are a person's identity, not data of
one license (an account may be an agent of several licenses, and the spec's targets name no tokens); a
token's hash must never reach a diff anyway. Add them here with `secrets=("token_hash",)` if that changes.
"""

from accounts.models import Agent, License, LicenseApp, Team
from audit.registry import register

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

# OAuth apps (the developer console) under the spec's `integrations`: created, scopes changed, deleted (the entry
# names the app). Their name, client and redirect URIs live on django-oauth-toolkit's Application row, which is
# no license's data; grants are credentials, not audited for the reason tokens are not (above).
register(LicenseApp, target="integrations", exclude=("application",))
