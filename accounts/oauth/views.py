"""The browser side of OAuth: signing in (account e-mail and password) and the consent page.

The consent page is DOT's AuthorizationView with our template; only an active owner of the app's license
may approve, anyone else sees a refusal (403) and nothing is granted. The page is shown every time: no
`approval_prompt=auto`, no HEAD. Introspection answers a client about its own tokens only.
"""

from __future__ import annotations

import hashlib

from django.contrib.auth import logout
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods
from oauth2_provider.models import get_access_token_model
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import AuthorizationView, IntrospectTokenView
from oauthlib.common import Request as OAuthRequest

from accounts.models import ROLE_OWNER, STATUS_ACTIVE, Agent
from accounts.oauth.models import LicenseApp

REFUSED = "accounts/oauth_refused.html"


class ConsentView(AuthorizationView):
    template_name = "oauth2_provider/authorize.html"
    # No HEAD: Django answers it with get(), which could issue a code past the owner check below.
    http_method_names = ["get", "post"]

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated:
            params = request.POST if request.method == "POST" else request.GET
            app = (
                LicenseApp.objects.select_related("application", "license")
                .filter(application__client_id=params.get("client_id", ""))
                .first()
            )
            if app is not None and not _is_active_owner(request.user, app.license):
                message = (
                    f"Only an owner of {_license_name(app.license)} can approve {app.application.name}. "
                    "Ask one of its owners to connect the app."
                )
                return render(request, REFUSED, {"title": "Not allowed", "message": message}, status=403)
            self.license_app = app
        return super().dispatch(request, *args, **kwargs)

    def get(self, request, *args, **kwargs):
        # An owner approves every grant (REQUEST_APPROVAL_PROMPT "force"): a client's `approval_prompt=auto`
        # would skip the page for anyone who once approved the app, however their role changed since.
        if "approval_prompt" in request.GET:
            request.GET = request.GET.copy()
            del request.GET["approval_prompt"]
        return super().get(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        app = getattr(self, "license_app", None)
        if app is not None:
            context.update(license=app.license, license_name=_license_name(app.license))
        context["title"] = "Connect an app"
        return context

    def form_valid(self, form):
        if "deny" in self.request.POST:
            # DOT's form reads "allow" as a checkbox: a deny button must not be taken for consent.
            form.cleaned_data["allow"] = False
        return super().form_valid(form)


def _is_active_owner(account, license) -> bool:
    agent = Agent.objects.filter(account=account, license=license, status=STATUS_ACTIVE).first()
    return agent is not None and ROLE_OWNER in agent.roles


def _license_name(license) -> str:
    return (license.settings or {}).get("companyName") or f"license {license.pk}"


@require_http_methods(["GET", "POST"])
def logout_page(request):
    logout(request)
    target = request.GET.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = "account-login"  # never an open redirect
    return redirect(target)


class IntrospectView(IntrospectTokenView):
    """RFC 7662 introspection, for a client's own tokens only: any other token (another app's, another
    license's) is `{"active": false}`, as for a token that does not exist (RFC 7662 §2.2 lets the server
    decide what a caller may learn), so no app learns whose e-mail or which scopes another app's token holds."""

    def get(self, request, *args, **kwargs):
        return self._answer(request, request.GET.get("token"))

    def post(self, request, *args, **kwargs):
        return self._answer(request, request.POST.get("token"))

    def _answer(self, request, token_value):
        if token_value is not None and not _is_own_token(_authenticated_client(request), token_value):
            return JsonResponse({"active": False})
        return self.get_token_response(token_value)


def _authenticated_client(request):
    """The client that authenticated this request (Basic or body credentials, as DOT's dispatch checked them)."""
    validator: OAuth2Validator = oauth2_settings.OAUTH2_VALIDATOR_CLASS()
    headers = {key: value for key, value in request.headers.items()}
    oauth_request = OAuthRequest(
        request.build_absolute_uri(), http_method=request.method, body=request.POST.dict(), headers=headers
    )
    return oauth_request.client if validator.authenticate_client(oauth_request) else None


def _is_own_token(client, token_value: str) -> bool:
    if client is None:
        return False
    checksum = hashlib.sha256(token_value.encode("utf-8")).hexdigest()
    return get_access_token_model().objects.filter(token_checksum=checksum, application=client).exists()
