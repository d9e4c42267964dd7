"""Admin: templates are written through the services (same rules as the API); sent mail is read-only."""

from django import forms
from django.contrib import admin, messages

from helpdesk.api.errors import Conflict
from templates_app import services
from templates_app.models import Invitation, OutboundMessage, Template


class TemplateForm(forms.ModelForm):
    class Meta:
        model = Template
        fields = ("license", "name", "type", "content")

    def clean_content(self):
        from templates_app.api.serializers import ContentSerializer

        serializer = ContentSerializer(data=self.cleaned_data["content"])
        if not serializer.is_valid():
            raise forms.ValidationError(f"Invalid content: {serializer.errors}")
        return dict(serializer.validated_data)


@admin.register(Template)
class TemplateAdmin(admin.ModelAdmin):
    form = TemplateForm
    list_display = ("name", "license", "type", "updated_at")
    list_filter = ("type",)
    search_fields = ("name",)
    raw_id_fields = ("license",)
    fields = ("license", "name", "type", "content")

    def get_readonly_fields(self, request, obj=None):
        return ("license", "type") if obj else ()

    def save_model(self, request, obj, form, change):
        if change:
            saved = services.template_update(template=obj, name=obj.name, content=obj.content)
        else:
            saved = services.template_create(
                license=obj.license, name=obj.name, content=obj.content, type=obj.type
            )
        obj.pk = saved.pk

    def delete_model(self, request, obj):
        try:
            services.template_delete(template=obj)
        except Conflict as exc:
            self.message_user(request, str(exc.detail), messages.ERROR)

    def delete_queryset(self, request, queryset):
        for template in queryset:
            self.delete_model(request, template)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(OutboundMessage)
class OutboundMessageAdmin(ReadOnlyAdmin):
    list_display = ("to", "kind", "subject", "status", "attempts", "created_at", "sent_at")
    list_filter = ("status", "kind")
    search_fields = ("to", "subject")
    exclude = ("text", "html")  # invitation e-mails carry live links


@admin.register(Invitation)
class InvitationAdmin(ReadOnlyAdmin):
    list_display = ("agent", "license", "created_at", "accepted_at", "revoked_at")
