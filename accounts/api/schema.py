"""accounts' parts of the OpenAPI document: the security schemes of its authentication classes
(accounts/api/authentication.py), registered with drf-spectacular when AccountsConfig.ready() imports this."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class TokenBasicScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.api.authentication.TokenBasicAuthentication"
    name = "basicToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "basic",
            "description": "Basic base64(accountID:token) with a personal access token (hdp_...).",
        }


class OAuthBearerScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.api.authentication.OAuthBearerAuthentication"
    name = "oauthBearer"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An OAuth 2.0 access token from /oauth/token (authorization code with PKCE), "
            "limited to its scopes and the approving agent's role.",
        }
