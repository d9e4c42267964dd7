"""The contract's agent roles. Agents hold them (`accounts.models.Agent.roles`) and the API's role checks decide
by them (helpdesk/api/permissions.py), so they are named here, below both."""

ROLE_OWNER, ROLE_NORMAL, ROLE_VIEWER = "owner", "normal", "viewer"
ROLES = [ROLE_OWNER, ROLE_NORMAL, ROLE_VIEWER]
