"""The admin console's site: every active agent signs in, not only staff (issue 30).

Django's AdminSite admits `is_staff` accounts; this one admits an active account that is an active agent of a
license too (what each then sees is accounts/admin/tenancy.py's roles). A staff account that is no agent still
signs in (operators, superusers). Loaded lazily as `admin.site` (accounts/console.py names it).
"""

from __future__ import annotations

from django.contrib.admin import AdminSite
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError

from accounts.models import STATUS_ACTIVE, Agent


def console_member(user) -> bool:
    """Whether `user` may sign in to the console: staff, or an active agent of some license."""
    if not (user.is_authenticated and user.is_active):
        return False
    if user.is_staff:
        return True
    return Agent.objects.filter(account=user, status=STATUS_ACTIVE).exists()


class ConsoleAuthenticationForm(AdminAuthenticationForm):
    def confirm_login_allowed(self, user):
        if not console_member(user):
            raise ValidationError(
                self.error_messages["invalid_login"],
                code="invalid_login",
                params={"username": self.username_field.verbose_name},
            )


class ConsoleSite(AdminSite):
    login_form = ConsoleAuthenticationForm

    def has_permission(self, request):
        if not hasattr(request, "_console_member"):
            request._console_member = console_member(request.user)
        return request._console_member
