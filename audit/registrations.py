"""The audited models, one line each (the diff names follow the API's spelling).

Not audited, on purpose: personal access tokens and accounts. They are a person's identity, not data of
one license (an account may be an agent of several licenses, and the spec's targets name no tokens); a
token's hash must never reach a diff anyway. Add them here with `secrets=("token_hash",)` if that changes.
"""

from accounts.models import Agent, License, Team
from audit.registry import register
from templates_app.models import Template

register(License, target="licenses", license_of=lambda license: license.pk)
register(
    Agent,
    target="agents",
    m2m={"teams": "teamIDs", "autoassignment_teams": "autoassignmentTeamIDs"},
    names={"signature_text": "signature.text", "signature_rich_text": "signature.richTextObj"},
)
register(Team, target="teams", m2m={"autoassignment_agents": "autoassignmentAgentIDs"})
register(Template, target="emailTemplates", m2m={"attachments": "attachments"})
# After merging tags and billing (the lead):
#   register(Tag, target="tags")
#   register(Subscription, target="licenses")  # the spec has no subscriptions target: a plan change is a
#                                              # change to the license's account; entityName tells them apart
