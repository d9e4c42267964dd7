"""DOT's request validator, narrowed: a refresh hands out what the grant may do now, not what it once could."""

from __future__ import annotations

from oauth2_provider.oauth2_validators import OAuth2Validator

from accounts.models import ROLE_NORMAL, ROLE_OWNER, STATUS_ACTIVE, Agent
from accounts.oauth import scopes


def agent_scopes(granted, *, license_app, agent) -> tuple[str, ...]:
    """The grant met with the app's current scopes and the approving agent's current role."""
    writes = bool({ROLE_OWNER, ROLE_NORMAL} & set(agent.roles))
    return scopes.effective(granted, app_scopes=license_app.scopes, writes=writes)


def current_scopes(granted, *, license_app, account) -> tuple[str, ...]:
    """`agent_scopes` for the account's active agent in the app's license (none: nothing)."""
    agent = Agent.objects.filter(
        account=account, license_id=license_app.license_id, status=STATUS_ACTIVE
    ).first()
    return () if agent is None else agent_scopes(granted, license_app=license_app, agent=agent)


class Validator(OAuth2Validator):
    def get_original_scopes(self, refresh_token, request, *args, **kwargs):
        # The new access token gets these (or the subset the client asks for): after PATCH /v1/apps/{ID}
        # narrowed the app, or its approver was made a viewer, a refresh never gives the old rights back.
        original = super().get_original_scopes(refresh_token, request, *args, **kwargs)
        granted = original.split() if isinstance(original, str) else list(original)
        license_app = getattr(request.refresh_token_instance.application, "license_app", None)
        if license_app is None:
            return []
        return list(
            current_scopes(granted, license_app=license_app, account=request.refresh_token_instance.user)
        )
