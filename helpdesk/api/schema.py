"""OpenAPI extras: the Basic token scheme, and the contract's error shape on every operation."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error", "code", "details"],
    "properties": {
        "error": {"type": "string", "description": "Human-readable summary"},
        "code": {"type": "string", "description": "Stable machine code, e.g. invalid, not_found, last_owner"},
        "details": {"nullable": True, "description": "Field errors {field: [messages]} or null"},
    },
}
_ERRORS = {
    "400": "Bad input (the field is named in details)",
    "401": "Missing or invalid credentials",
    "403": "Authenticated, but the role or token does not allow it",
    "404": "Not found (or belonging to another license)",
    "429": "Over a rate limit, or too many failed authentication attempts (Retry-After)",
}


class TokenBasicScheme(OpenApiAuthenticationExtension):
    target_class = "helpdesk.api.authentication.TokenBasicAuthentication"
    name = "basicToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "basic",
            "description": "Basic base64(accountID:token) with a personal access token (hdp_...).",
        }


class OAuthBearerScheme(OpenApiAuthenticationExtension):
    target_class = "helpdesk.api.authentication.OAuthBearerAuthentication"
    name = "oauthBearer"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An OAuth 2.0 access token from /oauth/token (authorization code with PKCE), "
            "limited to its scopes and the approving agent's role.",
        }


def add_error_responses(result, generator, request, public):
    """Postprocessing hook: every operation documents the error shape for its failure statuses."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    ref = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            responses = operation.setdefault("responses", {})
            for status, description in _ERRORS.items():
                responses.setdefault(status, {"description": description, **ref})
            if "409" not in responses and any(
                k in operation.get("operationId", "") for k in ("destroy", "update", "create")
            ):
                responses["409"] = {"description": "Conflict with the current state", **ref}
    return result
