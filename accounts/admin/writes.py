"""Admin writes go through the services, and a refusal by a service is the admin's normal form error.

How nothing is half-saved: Django runs the add/change view in one atomic block. `save_model` calls the
service; if the service refuses (Conflict, BadRequest, a DRF or Django ValidationError), the exception rolls
the block back (the object, its relations, the admin log entry, the audit entry), and the view runs once more
with the refusal attached to the form's clean(), which renders the form with the error (status 200) and
writes nothing. Deletions are tried in a savepoint that is always rolled back: a refused one is listed on
Django's "Cannot delete" page, like a protected object. Actions run in one atomic block: all or nothing.

Every view that writes (add, change, delete, the change list's actions and list edits) runs in one unit of work
(`UnitOfWorkAdmin`), so a change and its relations are one audit entry, written before the commit.
"""

from __future__ import annotations

import copy

from django.contrib import admin, messages
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, router, transaction
from django.http import HttpResponseRedirect
from rest_framework.exceptions import APIException
from rest_framework.exceptions import ValidationError as DrfValidationError

from helpdesk.api.errors import api_exception
from helpdesk.errors import DomainError
from helpdesk.transactions import unit_of_work

# IntegrityError: a constraint the service could not check first (a concurrent write); ProtectedError is one
SERVICE_ERRORS = (DomainError, APIException, DjangoValidationError, IntegrityError)


def error_messages(exc) -> dict[str | None, list[str]]:
    """A service error as {field or None: [messages]} (field names as the service spelled them)."""
    if isinstance(exc, IntegrityError):
        return {
            None: ["This change conflicts with other data (perhaps changed meanwhile); nothing was saved."]
        }
    if isinstance(exc, DjangoValidationError):
        return exc.message_dict if hasattr(exc, "error_dict") else {None: list(exc.messages)}
    if isinstance(exc, DomainError):
        exc = api_exception(exc)
    details = exc.detail if isinstance(exc, DrfValidationError) else getattr(exc, "details", None)
    if isinstance(details, dict) and details and all(isinstance(v, list) for v in details.values()):
        return {
            (None if key == "non_field_errors" else key): [str(m) for m in value]
            for key, value in details.items()
        }
    if isinstance(details, list):
        return {None: [str(m) for m in details]}
    return {None: [str(exc.detail)]}


def error_summary(exc) -> str:
    return " ".join(
        " ".join(msgs) if field is None else f"{field}: {' '.join(msgs)}"
        for field, msgs in error_messages(exc).items()
    )


class _DryRun(Exception):
    pass


class UnitOfWorkAdmin(admin.ModelAdmin):
    """The admin's writing views, each in one unit of work (around Django's own atomic block)."""

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        with unit_of_work(using=router.db_for_write(self.model)):
            return super().changeform_view(request, object_id, form_url, extra_context)

    def delete_view(self, request, object_id, extra_context=None):
        with unit_of_work(using=router.db_for_write(self.model)):
            return super().delete_view(request, object_id, extra_context)

    def changelist_view(self, request, extra_context=None):
        if request.method != "POST":
            return super().changelist_view(request, extra_context)
        with unit_of_work(using=router.db_for_write(self.model)):
            return super().changelist_view(request, extra_context)


class ServiceAdmin(UnitOfWorkAdmin):
    """Base of the admins that write through services.

    Subclasses implement `save_model` (the whole write, relations included, through the service) and
    `delete_object` (one deletion through the service). `service_field_names` maps the service's field names
    (the API's spelling, e.g. "teamIDs") to form fields, so a refusal shows next to the field it is about.
    """

    service_field_names: dict[str, str] = {}

    # --- add and change ---------------------------------------------------------------------------------

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        if request.method != "POST":
            return super().changeform_view(request, object_id, form_url, extra_context)
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except SERVICE_ERRORS as exc:
            # rolled back; once more, with the refusal as the form's error (the form is then invalid: no write)
            request._admin_service_error = exc
            self.service_refused(request, exc)
            return super().changeform_view(request, object_id, form_url, extra_context)

    def service_refused(self, request, exc) -> None:
        """Called once a service refused the form's write, before the form is shown again with the refusal."""

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        error = getattr(request, "_admin_service_error", None)
        if error is None:
            return form
        names = self.service_field_names

        class RefusedForm(form):
            def clean(self):
                cleaned = super().clean()
                for field, msgs in error_messages(error).items():
                    name = names.get(field, field)
                    if name in self.fields:
                        self.add_error(name, msgs)
                    else:
                        self.add_error(None, [f"{field}: {m}" if field else m for m in msgs])
                return cleaned

        RefusedForm.__name__ = form.__name__
        return RefusedForm

    def save_related(self, request, form, formsets, change):
        # relations of the object itself were written by the service in save_model; inlines are their own
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)

    # --- delete -----------------------------------------------------------------------------------------------

    def delete_object(self, request, obj) -> None:
        """One deletion; subclasses call their service."""
        obj.delete()

    def delete_model(self, request, obj):
        self.delete_object(request, obj)

    def delete_queryset(self, request, queryset):
        with unit_of_work(using=router.db_for_write(self.model)):
            for obj in queryset:
                self.delete_object(request, obj)

    def delete_refusals(self, request, objs) -> list[str]:
        """What the service would refuse if `objs` were deleted now, one after the other (tried, then rolled back)."""
        refusals = []
        try:
            # A unit of work, not a bare atomic block: the services' own units are nested in it, so their
            # before-commit callbacks (the totals' generation lock, the audit) wait for its end, and the dry
            # run's rollback drops them; a bare block would run each at once and lock out of order.
            with unit_of_work(using=router.db_for_write(self.model)):
                for obj in objs:
                    try:
                        with transaction.atomic(using=router.db_for_write(self.model)):
                            self.delete_object(request, copy.copy(obj))  # delete() clears the pk it is given
                    except SERVICE_ERRORS as exc:
                        refusals.append(f"{obj}: {error_summary(exc)}")
                raise _DryRun
        except _DryRun:
            pass
        return refusals

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        refusals = self.delete_refusals(request, list(objs))
        if refusals:
            # shown as protected objects (the page then refuses the POST); Django's own list of objects the
            # user may not delete (e.g. a license through PROTECT) would hide the reason
            return deleted, counts, set(), [*refusals, *protected]
        return deleted, counts, perms_needed, protected

    def delete_view(self, request, object_id, extra_context=None):
        try:
            return super().delete_view(request, object_id, extra_context)
        except SERVICE_ERRORS as exc:  # refused after the dry run passed (a concurrent change)
            self.message_user(request, error_summary(exc), messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    # --- actions ----------------------------------------------------------------------------------------------

    def response_action(self, request, queryset):
        try:
            with unit_of_work(using=router.db_for_write(self.model)):
                return super().response_action(request, queryset)
        except SERVICE_ERRORS as exc:
            self.message_user(request, f"Nothing was changed: {error_summary(exc)}", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())
