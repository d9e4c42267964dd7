"""The contract's scope grammar `<resource>--<my|access|all>:<ro|rw>`, and which resource a request touches.

DOT asks its scopes backend which scopes exist (every well-formed one, described in words for the consent
page) and which an application may request (those it registered). An OAuth token reaches an API path only
through a scope naming that path's resource; writes need `:rw`. The agent's role narrows it further
(helpdesk/api/permissions.py).
"""

from __future__ import annotations

import re

from oauth2_provider.scopes import BaseScopes

# Resource -> the words of the consent page. `apps` is no resource on purpose: an app never manages apps
# or grants (only an owner with a personal token does).
RESOURCES = {
    "accounts": "your account",
    "licenses": "the license settings",
    "agents": "agents",
    "teams": "teams",
    "templates": "e-mail templates, reply addresses and blocked and trusted senders",
    "tickets": "tickets, their messages and attachments",
    "tags": "tags",
    "subscriptions": "subscriptions and billing",
    "auditLog": "the audit log",
    "webhooks": "webhooks",
    "cannedResponses": "canned responses",
    "macros": "macros",
    "rules": "rules",
    "views": "saved ticket views",
    "customFields": "custom field definitions",
    "reports": "reports",
    "contactForms": "contact forms",
    "sla": "business hours and SLA policies",
}
# The first segment of an API path -> the resource whose scope covers it.
PATH_RESOURCES = {
    **{name: name for name in RESOURCES},
    "transactions": "tickets",
    "attachments": "tickets",
    "replyAddresses": "templates",
    "blockedEmails": "templates",
    "trustedEmails": "templates",
    "mailboxes": "templates",
    "emailDomains": "templates",
    "businessHours": "sla",
    "slaPolicies": "sla",
}
REACH = {"my": "your own", "access": "the accessible", "all": "all"}
MODES = {"ro": "Read", "rw": "Read and change"}
_RESOURCE_ALTERNATIVES = "|".join(map(re.escape, RESOURCES))
SCOPE_RE = re.compile(rf"^(?P<resource>{_RESOURCE_ALTERNATIVES})--(?P<reach>my|access|all):(?P<mode>ro|rw)$")


def is_valid(scope: str) -> bool:
    return SCOPE_RE.match(scope) is not None


def describe(scope: str) -> str:
    match = SCOPE_RE.match(scope)
    if match is None:
        return scope
    return f"{MODES[match['mode']]} {REACH[match['reach']]} {RESOURCES[match['resource']]}"


ALL_SCOPES = {
    scope: describe(scope)
    for scope in (
        f"{resource}--{reach}:{mode}" for resource in RESOURCES for reach in REACH for mode in MODES
    )
}


def resource_of(path: str) -> str | None:
    """`/v1/tickets/5` -> `tickets`; None for a path no scope covers (e.g. `/v1/apps`)."""
    parts = path.split("/")
    if len(parts) < 3 or parts[1] != "v1":
        return None
    return PATH_RESOURCES.get(parts[2])


def allows(scopes, path: str, write: bool) -> bool:
    """Whether a token with `scopes` may read (or write) at `path`."""
    resource = resource_of(path)
    if resource is None:
        return False
    for scope in scopes:
        match = SCOPE_RE.match(scope)
        if match and match["resource"] == resource and (not write or match["mode"] == "rw"):
            return True
    return False


_REACH_ORDER = ("my", "access", "all")
_MODE_ORDER = ("ro", "rw")


def effective(granted, *, app_scopes, writes: bool) -> tuple[str, ...]:
    """What a token may do now: its grant met with the app's current scopes (an app narrowed to
    `tickets--all:ro` turns a `tickets--all:rw` grant read-only) and, for an agent whose role never writes
    (`writes` false: a viewer), read-only. Computed at every authentication and refresh, so narrowing an app
    or demoting its approver narrows the tokens already out there at once."""
    result = []
    for scope in granted:
        grant = SCOPE_RE.match(scope)
        if grant is None:
            continue
        for allowed in app_scopes:
            app = SCOPE_RE.match(allowed)
            if app is None or app["resource"] != grant["resource"]:
                continue
            reach = min(grant["reach"], app["reach"], key=_REACH_ORDER.index)
            mode = min(grant["mode"], app["mode"] if writes else "ro", key=_MODE_ORDER.index)
            met = f"{grant['resource']}--{reach}:{mode}"
            if met not in result:
                result.append(met)
    return tuple(result)


class ScopesBackend(BaseScopes):
    """DOT's scopes: every scope of the grammar exists; an app may ask for the ones it registered."""

    def get_all_scopes(self):
        return ALL_SCOPES

    def get_available_scopes(self, application=None, request=None, *args, **kwargs):
        if application is None:
            return list(ALL_SCOPES)
        license_app = getattr(application, "license_app", None)
        return list(license_app.scopes) if license_app is not None else []

    def get_default_scopes(self, application=None, request=None, *args, **kwargs):
        return self.get_available_scopes(application, request)
