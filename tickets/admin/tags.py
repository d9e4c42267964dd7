"""Tags, written through tickets.services; searched by the ticket form's autocomplete."""

from django import forms
from django.contrib import admin

from accounts.admin.tenancy import LicenseScopedAdmin, ScopedRelatedListFilter
from helpdesk.api.permissions import WRITERS
from tickets import services
from tickets.models import Tag


class TagForm(forms.ModelForm):
    class Meta:
        model = Tag
        fields = ("license", "name")


@admin.register(Tag)
class TagAdmin(LicenseScopedAdmin):
    form = TagForm
    list_display = ("name", "license", "updated_at")
    list_select_related = ("license",)
    list_filter = (("license", ScopedRelatedListFilter),)
    search_fields = ("name",)
    ordering = ("license", "name")
    autocomplete_fields = ("license",)
    readonly_fields = ("created_at", "created_by", "created_by_type", "updated_at", "updated_by")
    writers = WRITERS  # as /v1/tags

    def get_fields(self, request, obj=None):
        return ("name", *self.readonly_fields) if obj is not None else ("license", "name")

    def save_model(self, request, obj, form, change):
        if change:
            if "name" in form.changed_data:
                services.tag_update(tag=obj, name=form.cleaned_data["name"])
            return
        obj.pk = services.tag_create(license=form.cleaned_data["license"], name=form.cleaned_data["name"]).pk

    def delete_object(self, request, obj):
        services.tag_delete(tag=obj)
