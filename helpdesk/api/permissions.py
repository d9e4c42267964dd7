"""Roles decide what an agent may do (the contract's table). Views declare it; this class enforces it."""

from rest_framework import exceptions, permissions

from helpdesk.roles import ROLE_NORMAL, ROLE_OWNER, ROLE_VIEWER

EVERYONE = frozenset({ROLE_OWNER, ROLE_NORMAL, ROLE_VIEWER})
OWNERS = frozenset({ROLE_OWNER})
WRITERS = frozenset({ROLE_OWNER, ROLE_NORMAL})


class NoLicense(exceptions.PermissionDenied):
    default_detail = (
        "This account is not an active agent of any license yet (create one with POST /v1/licenses)."
    )
    default_code = "no_license"


class LicenseNotMember(exceptions.PermissionDenied):
    """`X-License-ID` names a license the caller is no active agent of. The same answer whether that license
    exists or not: the header must not become a way to probe license IDs."""

    default_code = "license_not_member"

    def __init__(self, license_id: int):
        super().__init__(f"You are not an agent of license {license_id}.")


class InsufficientScope(exceptions.PermissionDenied):
    default_detail = "This token is read-only."
    default_code = "insufficient_scope"


class RolePermission(permissions.BasePermission):
    """`view.roles` maps an action to the roles allowed; unlisted actions: reads for `view.readers`, writes for
    `view.writers` (default: reads for all, writes for owners).

    A view with `license_required = False` (license creation, listing) may be used before the account has
    a license. A token whose scopes are all read-only (`:ro`) never writes.
    """

    def has_permission(self, request, view):
        if request.user is None:
            raise exceptions.NotAuthenticated()
        token = getattr(request, "token", None)
        if (
            request.method not in permissions.SAFE_METHODS
            and token is not None
            and not any(scope.endswith(":rw") for scope in token.scopes)
        ):
            raise InsufficientScope()
        if getattr(token, "resource_scoped", False):
            self._check_resource_scope(request, token)
        if not getattr(view, "license_required", True):
            # An OAuth grant is bound to its app's license: an app never creates another one.
            if getattr(token, "resource_scoped", False) and request.method not in permissions.SAFE_METHODS:
                raise InsufficientScope("Apps cannot create licenses.")
            return True
        agent = getattr(request, "agent", None)
        if agent is None:
            wanted = getattr(request, "wanted_license_id", None)
            raise NoLicense() if wanted is None else LicenseNotMember(wanted)
        allowed = self.allowed_roles(request, view)
        if not set(agent.roles) & allowed:
            raise exceptions.PermissionDenied("Your role does not allow this operation.")
        return True

    @staticmethod
    def _check_resource_scope(request, token) -> None:
        """An OAuth token reaches a path only through a scope naming its resource (`:rw` to write; the token
        knows its scope grammar: accounts/api/authentication.py); the role check that follows narrows it to
        what the approving agent may do."""
        write = request.method not in permissions.SAFE_METHODS
        if not token.allows(request.path, write=write):
            raise InsufficientScope("This token's scopes do not allow this operation.")

    @staticmethod
    def allowed_roles(request, view) -> frozenset:
        roles = getattr(view, "roles", {})
        action = getattr(view, "action", None)
        if action in roles:
            return roles[action]
        if request.method in permissions.SAFE_METHODS:
            return getattr(view, "readers", EVERYONE)
        return getattr(view, "writers", OWNERS)


class CredentialsOptional(RolePermission):
    """For routes that also serve callers without API credentials, whose proof the view checks (a signed link,
    the admin's session): API credentials, when sent, pass the same scope and role check as on every route."""

    def has_permission(self, request, view):
        if request.auth is None:
            return True
        return super().has_permission(request, view)
