"""Which ID stands for the current actor in a license: the ID a client finds in `/v1/agents`.

Stamps (`createdBy`, `updatedBy`) and audit entries (`author.ID`) use it, so a client can look the author up and
filter the audit log by it. A person acting in a license they are an agent of is that agent's ID; a support
admin who is no agent of the license is their account ID; the system in any role is `SYSTEM_ACTOR_ID`.
"""

from __future__ import annotations

import uuid

from helpdesk.context import PERSON_TYPES, SYSTEM_ACTOR_ID, Actor, current_actor


def actor_id_in(license_id: int | None, actor: Actor | None = None) -> uuid.UUID:
    from accounts.models import Agent

    actor = actor or current_actor()
    if actor.type not in PERSON_TYPES or actor.id is None:
        return SYSTEM_ACTOR_ID
    if actor.agent_id is not None and actor.license_id == license_id:
        return actor.agent_id  # the API's caller in its own license: known without a query
    if license_id is not None:
        agent_id = (
            Agent.objects.filter(license_id=license_id, account_id=actor.id)
            .values_list("pk", flat=True)
            .first()
        )
        if agent_id is not None:
            return agent_id
    return actor.id
