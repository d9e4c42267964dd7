"""Admin: templates are written through the services (same rules as the API), with a preview rendered by
the one renderer; sent mail and invitations are read-only. All of it scoped to the admin user's licenses."""

from django import forms
from django.contrib import admin
from django.utils.html import format_html

from accounts.admin.tenancy import LicenseScopedAdmin, ReadOnlyLicenseScopedAdmin, ScopedRelatedListFilter
from templates_app import mail, reply_addresses, services
from templates_app.models import Invitation, OutboundMessage, ReplyAddress, Template
from templates_app.rendering import render


class TemplateForm(forms.ModelForm):
    class Meta:
        model = Template
        fields = ("license", "name", "type", "content")
        widgets = {
            "content": forms.Textarea(attrs={"rows": 12, "cols": 90, "style": "font-family: monospace"})
        }
        help_texts = {
            "content": 'JSON: {"text": "...", "html": "...", "appearance": {"textColor": {"type": "color", '
            '"value": "#1f2328"}}}; placeholders such as {{requester.name}} and {{ticket.subject}}.'
        }

    def clean_content(self):
        from templates_app.api.serializers import ContentSerializer

        serializer = ContentSerializer(data=self.cleaned_data["content"])
        if not serializer.is_valid():
            raise forms.ValidationError(f"Invalid content: {serializer.errors}")
        return dict(serializer.validated_data)


@admin.register(Template)
class TemplateAdmin(LicenseScopedAdmin):
    form = TemplateForm
    list_display = ("name", "license", "type", "is_default", "updated_at")
    list_select_related = ("license",)
    list_filter = ("type", ("license", ScopedRelatedListFilter))
    search_fields = ("name",)
    ordering = ("license", "name")
    autocomplete_fields = ("license",)
    stamps = ("created_at", "created_by", "created_by_type", "updated_at", "updated_by")

    def get_fieldsets(self, request, obj=None):
        fieldsets = [(None, {"fields": ("license", "name", "type", "content")})]
        if obj is not None:
            fieldsets.append(("Preview (sample data)", {"fields": ("preview_html", "preview_text")}))
            fieldsets.append(("Stamps", {"classes": ("collapse",), "fields": self.stamps}))
        return fieldsets

    def get_readonly_fields(self, request, obj=None):
        return ("license", "type", "preview_html", "preview_text", *self.stamps) if obj else ()

    def _rendered(self, obj):
        if not hasattr(obj, "_preview"):
            logo = mail.logo(obj)
            obj._preview = render(
                type=obj.type,
                content=obj.content,
                context=mail.sample_context(license=obj.license),
                powered_by=mail.powered_by(obj.license),
                logo_cid=mail.cid(logo) if logo else None,
            )
        return obj._preview

    @admin.display(description="HTML")
    def preview_html(self, obj):
        # sanitized by the renderer, and shown in a sandboxed frame without scripts or same-origin access
        return format_html(
            '<iframe sandbox="" title="HTML preview" srcdoc="{}" '
            'style="width: 100%; min-width: 600px; height: 360px; border: 1px solid #ccc; background: #fff">'
            "</iframe>",
            self._rendered(obj).html,
        )

    @admin.display(description="Text")
    def preview_text(self, obj):
        return format_html("<pre style='white-space: pre-wrap'>{}</pre>", self._rendered(obj).text)

    @admin.display(boolean=True, description="default")
    def is_default(self, obj):
        return obj.license.default_template_id == obj.pk

    def save_model(self, request, obj, form, change):
        if change:
            saved = services.template_update(template=obj, name=obj.name, content=obj.content)
        else:
            saved = services.template_create(
                license=obj.license, name=obj.name, content=obj.content, type=obj.type
            )
        obj.pk = saved.pk

    def delete_object(self, request, obj):
        services.template_delete(template=obj)


@admin.register(OutboundMessage)
class OutboundMessageAdmin(ReadOnlyLicenseScopedAdmin):
    list_display = ("to", "kind", "subject", "status", "attempts", "license", "created_at", "sent_at")
    list_select_related = ("license",)
    list_filter = ("status", "kind", ("license", ScopedRelatedListFilter))
    search_fields = ("to", "subject")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    exclude = ("text", "html", "attachments")  # invitation e-mails carry live links


@admin.register(Invitation)
class InvitationAdmin(ReadOnlyLicenseScopedAdmin):
    list_display = ("agent", "license", "created_at", "accepted_at", "revoked_at")
    list_select_related = ("agent", "license")
    list_filter = (("license", ScopedRelatedListFilter),)
    search_fields = ("agent__email",)
    ordering = ("-created_at",)


@admin.register(ReplyAddress)
class ReplyAddressAdmin(LicenseScopedAdmin):
    """Added through the service (which e-mails the confirmation link); verified only by that link."""

    list_display = ("email", "name", "license", "verified_at", "created_at")
    list_select_related = ("license",)
    list_filter = (("license", ScopedRelatedListFilter),)
    search_fields = ("email", "name")
    ordering = ("license", "email")
    autocomplete_fields = ("license",)
    fields = ("license", "email", "name", "verified_at", "created_at", "created_by")

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request, obj)

    def get_readonly_fields(self, request, obj=None):
        return ("verified_at", "created_at", "created_by") if obj is None else self.fields

    def save_model(self, request, obj, form, change):
        obj.pk = reply_addresses.reply_address_create(license=obj.license, email=obj.email, name=obj.name).pk

    def delete_object(self, request, obj):
        reply_addresses.reply_address_delete(address=obj)
