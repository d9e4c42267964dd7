"""`/oauth/authorize` (the consent page), `/oauth/token`, `/oauth/revoke_token`, `/oauth/introspect` (DOT's
views), and the sign-in page the consent page sends a signed-out owner to. DOT's application-management
views are left out: apps are managed at /v1/apps."""

from django.contrib.auth import views as auth_views
from django.urls import path
from oauth2_provider import views as dot

from accounts import passwords
from accounts.oauth.views import ConsentView, IntrospectView, logout_page

oauth_patterns = (
    [
        path("authorize", ConsentView.as_view(), name="authorize"),
        path("token", dot.TokenView.as_view(), name="token"),
        path("revoke_token", dot.RevokeTokenView.as_view(), name="revoke-token"),
        path("introspect", IntrospectView.as_view(), name="introspect"),
    ],
    "oauth2_provider",
)

account_patterns = [
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="accounts/login.html", extra_context={"title": "Sign in"}),
        name="account-login",
    ),
    path("logout/", logout_page, name="account-logout"),
    # Password reset by e-mail (accounts/passwords.py): Django's views and URL names.
    path("password_reset/", passwords.PasswordResetView.as_view(), name="password_reset"),
    path("password_reset/done/", passwords.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "reset/<uidb64>/<token>/", passwords.PasswordResetConfirmView.as_view(), name="password_reset_confirm"
    ),
    path("reset/done/", passwords.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
]
