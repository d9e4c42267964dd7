"""Accounts (identities, the admin's users) and their personal access tokens.

Identities are not license data (one account may be an agent of several licenses), so these admins are for
superusers (or staff given Django's permissions explicitly), not for license owners.
A token is issued through accounts.services.token_issue: its plaintext is rendered once, in the response to
the form that issued it (never redirected through a message, never stored), and only its hash is kept.
"""

from __future__ import annotations

import re

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import BaseUserCreationForm, UserChangeForm
from django.template.response import TemplateResponse
from django.urls import reverse

from accounts import services
from accounts.admin.writes import ServiceAdmin, UnitOfWorkAdmin
from accounts.models import Account, PersonalAccessToken

SCOPE_RE = re.compile(r"^[a-z][a-z_]*--(my|access|all):(ro|rw)$")


class AccountCreationForm(BaseUserCreationForm):
    class Meta:
        model = Account
        fields = ("email", "name")

    def clean_email(self):
        return self.cleaned_data["email"].strip().lower()


class AccountChangeForm(UserChangeForm):
    class Meta:
        model = Account
        fields = "__all__"


class TokenInline(admin.TabularInline):
    model = PersonalAccessToken
    fields = ("hint", "name", "scopes", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Account)
class AccountAdmin(UnitOfWorkAdmin, UserAdmin):
    form = AccountChangeForm
    add_form = AccountCreationForm
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Profile", {"fields": ("name",)}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser")}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "name", "password1", "password2")}),)
    list_display = ("email", "name", "is_staff", "is_superuser", "is_active", "last_login", "date_joined")
    list_filter = ("is_staff", "is_superuser", "is_active")
    search_fields = ("email", "name")
    ordering = ("email",)
    filter_horizontal = ()
    readonly_fields = ("last_login", "date_joined")
    date_hierarchy = "date_joined"
    inlines = (TokenInline,)

    def get_inlines(self, request, obj):
        return self.inlines if obj is not None else ()


class TokenStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("active", "active"), ("revoked", "revoked")]

    def queryset(self, request, queryset):
        if self.value() == "active":
            return queryset.filter(revoked_at__isnull=True)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        return queryset


class TokenIssueForm(forms.ModelForm):
    scopes = forms.CharField(
        initial=" ".join(services.DEFAULT_TOKEN_SCOPES),
        help_text="Space-separated, e.g. accounts--my:ro (needed to authenticate) accounts--all:rw.",
    )

    class Meta:
        model = PersonalAccessToken
        fields = ("account", "name", "scopes")

    def clean_scopes(self):
        scopes = self.cleaned_data["scopes"].split()
        bad = [scope for scope in scopes if not SCOPE_RE.match(scope)]
        if bad:
            raise forms.ValidationError(
                f"Not a scope: {', '.join(bad)} (<resource>--<my|access|all>:<ro|rw>)."
            )
        return scopes


@admin.register(PersonalAccessToken)
class PersonalAccessTokenAdmin(ServiceAdmin):
    list_display = (
        "hint",
        "name",
        "account",
        "scope_list",
        "created_at",
        "last_used_at",
        "revoked_at",
        "active",
    )
    list_select_related = ("account",)
    list_filter = (TokenStateFilter,)
    search_fields = ("account__email", "name", "hint")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    autocomplete_fields = ("account",)
    actions = ("revoke_tokens",)
    readonly_fields = ("account", "name", "hint", "scopes", "created_at", "last_used_at", "revoked_at")

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = TokenIssueForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields if obj is not None else ()

    def get_fields(self, request, obj=None):
        return self.readonly_fields if obj is not None else ("account", "name", "scopes")

    def has_change_permission(self, request, obj=None):
        return False  # a token is issued or revoked, never edited

    @admin.display(description="scopes")
    def scope_list(self, obj):
        return " ".join(obj.scopes)

    @admin.display(boolean=True, description="active")
    def active(self, obj):
        return obj.is_active

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        token, plaintext = services.token_issue(
            account=data["account"], name=data["name"], scopes=data["scopes"]
        )
        obj.pk = token.pk
        obj._plaintext = plaintext  # for response_add only; never saved

    def response_add(self, request, obj, post_url_continue=None):
        context = {
            **self.admin_site.each_context(request),
            "title": "Token issued",
            "opts": self.opts,
            "token": obj,
            "plaintext": obj._plaintext,
            "account": obj.account,
            "changelist_url": reverse("admin:accounts_personalaccesstoken_changelist"),
        }
        response = TemplateResponse(request, "admin/accounts/personalaccesstoken/issued.html", context)
        response["Cache-Control"] = "no-store"
        return response

    def has_delete_permission(self, request, obj=None):
        return False  # revoked, not deleted: the row stays for the record

    def has_revoke_permission(self, request):
        return super().has_change_permission(request)

    @admin.action(description="Revoke selected tokens", permissions=["revoke"])
    def revoke_tokens(self, request, queryset):
        now_active = [token for token in queryset if token.is_active]
        for token in now_active:
            services.token_revoke(token=token)
        self.message_user(request, f"Revoked {len(now_active)} token(s).", messages.SUCCESS)
