"""Licenses: typed fields for the settings, the defaults chosen among the license's own teams and templates.

The billing app registers its subclass in place of this one (billing/admin.py: the Subscription section), so
that accounts never depends on it."""

from __future__ import annotations

from django import forms
from django.contrib import admin

from accounts import services
from accounts.admin.display import key_values
from accounts.admin.tenancy import LicenseScopedAdmin
from accounts.models import License


class LicenseAddForm(forms.ModelForm):
    owner_email = forms.EmailField(
        help_text="The first owner; their account is created if it does not exist."
    )
    company_name = forms.CharField(required=False, max_length=200)

    class Meta:
        model = License
        fields = ()


# form field -> settings key; limits as in the API (accounts.api.serializers.LicenseSettingsSerializer)
SETTINGS_KEYS = {
    "company_name": "companyName",
    "default_mailbox_description": "defaultMailboxDescription",
    "external_tickets": "externalTickets",
    "ticket_thread": "ticketThread",
    "powered_by_footer": "poweredByFooter",
    "max_subscriptions_per_socket": "maxSubscriptionsPerSocket",
    "max_child_tickets_per_ticket": "maxChildTicketsPerTicket",
}


class LicenseForm(forms.ModelForm):
    """The license's settings as typed fields (the JSON object is merged key by key by license_update)."""

    company_name = forms.CharField(label="Company name", required=False, max_length=200)
    default_mailbox_description = forms.CharField(
        required=False, max_length=500, widget=forms.Textarea(attrs={"rows": 2, "cols": 60})
    )
    external_tickets = forms.BooleanField(required=False)
    ticket_thread = forms.BooleanField(
        required=False, help_text="Replies are threaded into one conversation."
    )
    powered_by_footer = forms.BooleanField(required=False, help_text="'Powered by HelpDesk' under e-mails.")
    max_subscriptions_per_socket = forms.IntegerField(min_value=1, max_value=1000)
    max_child_tickets_per_ticket = forms.IntegerField(min_value=1, max_value=1000)

    class Meta:
        model = License
        fields = ("default_team", "default_template", *SETTINGS_KEYS)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        settings = self.instance.settings or {}
        for name, key in SETTINGS_KEYS.items():
            if key in settings:
                self.initial.setdefault(name, settings[key])
        for name in ("default_team", "default_template"):
            if name in self.fields:
                self.fields[name].required = True

    def settings_changes(self) -> dict:
        current = self.instance.settings or {}
        return {
            key: self.cleaned_data[name]
            for name, key in SETTINGS_KEYS.items()
            if name in self.cleaned_data and current.get(key) != self.cleaned_data[name]
        }


@admin.register(License)
class LicenseAdmin(LicenseScopedAdmin):
    license_field = "pk"
    list_display = ("id", "company", "default_team", "default_template", "created_at", "updated_at")
    list_display_links = ("id", "company")
    list_select_related = ("default_team", "default_template")
    search_fields = ("=id", "settings__companyName", "agents__email")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    autocomplete_fields = ("default_team", "default_template")
    readonly_fields = (
        "flags_display", "source_display", "detected_languages",
        "created_at", "created_by", "created_by_type", "updated_at", "updated_by",
    )  # fmt: skip
    service_field_names = {"defaultTeamID": "default_team", "defaultTemplateID": "default_template"}

    def get_form(self, request, obj=None, change=False, **kwargs):
        kwargs["form"] = LicenseForm if obj is not None else LicenseAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return ((None, {"fields": ("owner_email", "company_name")}),)
        return (
            (None, {"fields": ("default_team", "default_template")}),
            ("Settings", {"fields": tuple(SETTINGS_KEYS)}),
            ("Flags and source", {"fields": ("flags_display", "source_display", "detected_languages")}),
            (
                "Stamps",
                {
                    "classes": ("collapse",),
                    "fields": ("created_at", "created_by", "created_by_type", "updated_at", "updated_by"),
                },
            ),
        )

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else self.readonly_fields

    @admin.display(description="company", ordering="id")
    def company(self, obj):
        return (obj.settings or {}).get("companyName") or "—"

    @admin.display(description="flags")
    def flags_display(self, obj):
        return key_values(obj.flags)

    @admin.display(description="source")
    def source_display(self, obj):
        return key_values({k: v for k, v in (obj.source or {}).items() if v})

    def has_add_permission(self, request):
        return request.user.is_superuser  # a license is created with its first owner, by an operator

    def has_delete_permission(self, request, obj=None):
        return False  # licenses are not deleted (no service, no API); their audit log outlives them anyway

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        if not change:
            obj.pk = services.license_create(
                owner_email=data["owner_email"], company_name=data["company_name"]
            ).pk
            return
        update = {
            name: data[name] for name in ("default_team", "default_template") if name in form.changed_data
        }
        settings_changes = form.settings_changes()
        if settings_changes:
            update["settings"] = settings_changes
        if update:
            services.license_update(license=obj, data=update)
