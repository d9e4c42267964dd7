"""Views (saved ticket searches), written through tickets.saved_views.services. A license's owners see its shared
views here; private views are their agents' own (a superuser sees them, read as any other row)."""

from django import forms
from django.contrib import admin

from accounts.admin.tenancy import LicenseScopedAdmin, ScopedRelatedListFilter, admin_license_ids
from tickets.saved_views import services
from tickets.saved_views.models import View


class ViewForm(forms.ModelForm):
    class Meta:
        model = View
        fields = ("license", "name", "filters", "ordering")


@admin.register(View)
class ViewAdmin(LicenseScopedAdmin):
    form = ViewForm
    list_display = ("name", "license", "agent", "ordering", "updated_at")
    list_select_related = ("license", "agent")
    list_filter = (("license", ScopedRelatedListFilter),)
    search_fields = ("name",)
    ordering = ("license", "ordering", "name")
    autocomplete_fields = ("license",)
    readonly_fields = ("agent", "created_at", "created_by", "created_by_type", "updated_at", "updated_by")

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        return queryset if admin_license_ids(request) is None else queryset.filter(agent__isnull=True)

    def get_fields(self, request, obj=None):
        editable = ("name", "filters", "ordering")
        return (*editable, *self.readonly_fields) if obj is not None else ("license", *editable)

    def save_model(self, request, obj, form, change):
        fields = {name: form.cleaned_data[name] for name in ("name", "filters", "ordering")}
        fields["filters"] = fields["filters"] or {}
        if change:
            services.view_update(view=obj, author=None, **fields)
            return
        obj.pk = services.view_create(license=form.cleaned_data["license"], author=None, **fields).pk

    def delete_object(self, request, obj):
        services.view_delete(view=obj, author=None)
