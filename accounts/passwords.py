"""Password reset by e-mail (Django's views), for every account whose person can read its mailbox.

Django's form leaves out accounts without a usable password; here they are included: an account created for
an address (an agent added by a license, an invitation not yet accepted) has no password, and proving the
address by the e-mailed link is what makes the account its person's (issue 36: no one is locked out of an
account that a license typed first). The link is Django's: single-use, expiring after PASSWORD_RESET_TIMEOUT.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordResetForm


class AccountPasswordResetForm(PasswordResetForm):
    def get_users(self, email):
        return get_user_model()._default_manager.filter(email__iexact=email, is_active=True)


class PasswordResetView(auth_views.PasswordResetView):
    form_class = AccountPasswordResetForm
    template_name = "accounts/password_reset_form.html"
    email_template_name = "accounts/password_reset_email.txt"
    subject_template_name = "accounts/password_reset_subject.txt"
    extra_context = {"title": "Reset your password"}

    def form_valid(self, form):
        # The link names this service's address, never the request's Host header.
        self.extra_email_context = {"app_url": settings.HELPDESK_APP_URL.rstrip("/")}
        return super().form_valid(form)


class PasswordResetDoneView(auth_views.PasswordResetDoneView):
    template_name = "accounts/password_reset_done.html"
    extra_context = {"title": "Check your e-mail"}


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    template_name = "accounts/password_reset_confirm.html"
    extra_context = {"title": "Choose a password"}


class PasswordResetCompleteView(auth_views.PasswordResetCompleteView):
    template_name = "accounts/password_reset_complete.html"
    extra_context = {"title": "Password set"}
