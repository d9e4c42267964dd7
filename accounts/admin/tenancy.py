"""Tenancy and roles of the admin console, in one place: which licenses a signed-in person may see, what each
of their roles lets them do there, and the mixin that applies both to every license-owned ModelAdmin (lists,
objects, permissions, related choices and autocomplete).

Every active agent signs in (accounts/admin/site.py) and is decided by the API's rules (helpdesk.api.permissions):
a ModelAdmin declares `readers` and `writers` as the API's viewset does (reads for every role, writes for owners,
unless it says otherwise), and a role counts only in the license where the agent holds it. Per-object rules (a
normal agent's own profile, private views and macros) are the services' own checks, given the agent as actor.
Superusers see every license and are decided by Django's permissions; a staff account that is no active agent
sees nothing license-owned. Django's model permissions are never consulted for an agent.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.widgets import AutocompleteSelect, AutocompleteSelectMultiple
from django.db.models import Q

from accounts.admin.writes import ServiceAdmin
from accounts.models import STATUS_ACTIVE, Agent, License
from helpdesk import replicas
from helpdesk.api.permissions import EVERYONE, OWNERS


def admin_agents(request) -> dict[int, Agent] | None:
    """The signed-in person's active agents by license; None for a superuser (every license). Cached on the
    request: one query per page."""
    user = request.user
    if not (user.is_authenticated and user.is_active):
        return {}
    if user.is_superuser:
        return None
    if not hasattr(request, "_admin_agents"):
        agents = Agent.objects.filter(account=user, status=STATUS_ACTIVE).select_related("license")
        request._admin_agents = {agent.license_id: agent for agent in agents}
    return request._admin_agents


def admin_license_ids(request, roles=EVERYONE) -> list[int] | None:
    """The licenses where this person holds one of `roles` (any role: the licenses they see); None: all."""
    agents = admin_agents(request)
    if agents is None:
        return None
    return sorted(pk for pk, agent in agents.items() if set(agent.roles) & roles)


def admin_agent(request, license_id) -> Agent | None:
    """The person's agent in `license_id` (None for a superuser who is none: the admin acts as itself)."""
    agents = admin_agents(request)
    if agents is None:
        agents = getattr(request, "_superuser_agents", None)
        if agents is None:
            agents = {
                a.license_id: a for a in Agent.objects.filter(account=request.user, status=STATUS_ACTIVE)
            }
            request._superuser_agents = agents
    return agents.get(license_id)


def acting_agent(request, license_id) -> Agent | None:
    """Who a service checks the write against: the agent (its roles, its own private things), or None for a
    superuser (the operator, as before)."""
    return None if request.user.is_superuser else admin_agent(request, license_id)


def license_path(model) -> str | None:
    """How `model` reaches its license in a query ("pk" for License itself), or None if it is not license-owned."""
    if model is License:
        return "pk"
    names = {field.name for field in model._meta.get_fields()}
    return "license" if "license" in names else None


def scope_q(request, model, license_id=None) -> Q | None:
    """The filter that keeps `model`'s rows to what `request` may see (and to `license_id` when given)."""
    path = license_path(model)
    if path is None:
        return None
    q = Q()
    ids = admin_license_ids(request)
    if ids is not None:
        q &= Q(**{f"{path}__in": ids})
    if license_id is not None:
        q &= Q(**{path: license_id})
    return q


class LicenseAutocompleteMixin:
    """An autocomplete widget that asks only for one license's objects (`?license=` narrows, never widens:
    the target admin's get_queryset still applies tenancy)."""

    def __init__(self, *args, license_id=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.license_id = license_id

    def get_url(self):
        url = super().get_url()
        return f"{url}?license={self.license_id}" if self.license_id is not None else url


class LicenseAutocompleteSelect(LicenseAutocompleteMixin, AutocompleteSelect):
    pass


class LicenseAutocompleteSelectMultiple(LicenseAutocompleteMixin, AutocompleteSelectMultiple):
    pass


class ScopedRelatedListFilter(admin.RelatedFieldListFilter):
    """A related-object filter offering only the objects the admin user may see (never another license's)."""

    def field_choices(self, field, request, model_admin):
        ordering = self.field_admin_ordering(field, request, model_admin)
        q = scope_q(request, field.related_model)
        if license_path(field.related_model) != "license":
            return field.get_choices(include_blank=False, ordering=ordering, limit_choices_to=q or {})
        # Every license has a team "General": the license's name tells two of them apart ("General (Acme)").
        rows = field.related_model._default_manager.filter(q).select_related("license")
        choices = [(obj.pk, f"{obj} ({license_label(obj.license)})") for obj in rows]
        return sorted(choices, key=lambda choice: choice[1].lower())


def license_label(license: License) -> str:
    """A license as people name it: its company, else its number."""
    return (license.settings or {}).get("companyName") or f"License {license.pk}"


class LicenseScopedAdmin(ServiceAdmin):
    """Base of every license-owned ModelAdmin: tenancy for lists, objects, permissions and related choices."""

    license_field = "license"  # how the model reaches its License ("pk" on the License admin)
    readers = EVERYONE  # the roles that see these rows, as the API's viewset declares them
    writers = OWNERS  # the roles that add, change and delete them
    superuser_only = False  # Django's machinery (charges, idempotency records): no agent sees it

    # --- rows -------------------------------------------------------------------------------------------

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if self.superuser_only and not request.user.is_superuser:
            return queryset.none()
        ids = admin_license_ids(request, self.readers)
        return queryset if ids is None else queryset.filter(**{f"{self.license_field}__in": ids})

    def license_id_of(self, obj):
        return obj.pk if self.license_field == "pk" else getattr(obj, f"{self.license_field}_id")

    def changelist_view(self, request, extra_context=None):
        if request.method != "GET":  # a bulk action writes: the primary
            return super().changelist_view(request, extra_context)
        # A list (its counts and filters included) reads from a replica that has replayed the admin's last
        # write (helpdesk.replicas), rendered there too.
        return replicas.reading(
            request.user, lambda: super(LicenseScopedAdmin, self).changelist_view(request, extra_context)
        )

    def get_search_results(self, request, queryset, search_term):
        queryset, distinct = super().get_search_results(request, queryset, search_term)
        # autocomplete widgets of one object's form ask for that object's license only
        license_id = request.GET.get("license", "")
        if request.path.endswith("/autocomplete/") and license_id.isdigit():
            queryset = queryset.filter(**{self.license_field: int(license_id)})
        return queryset, distinct

    # --- permissions --------------------------------------------------------------------------------------

    def _tenant_allows(self, request, obj, roles, *, write=False):
        """None for a superuser (Django's permissions decide), else whether this person holds one of `roles` in
        `obj`'s license (in any of their licenses when `obj` is None)."""
        if request.user.is_superuser:
            return None
        if self.superuser_only:
            return False
        if obj is None:
            return bool(admin_license_ids(request, roles))
        agent = (admin_agents(request) or {}).get(self.license_id_of(obj))
        if agent is None or not set(agent.roles) & roles:
            return False
        return self.object_allows(request, obj, agent, write=write)

    def object_allows(self, request, obj, agent, *, write: bool) -> bool:
        """A per-object rule on top of the roles (a private view is its agent's, a shared one the owners' to
        change): the services' own rule, so that the console offers only what they would accept."""
        return True

    def has_module_permission(self, request):
        allowed = self._tenant_allows(request, None, self.readers)
        return super().has_module_permission(request) if allowed is None else allowed

    def has_view_permission(self, request, obj=None):
        allowed = self._tenant_allows(request, obj, self.readers)
        return super().has_view_permission(request, obj) if allowed is None else allowed

    def has_add_permission(self, request, *args):
        allowed = self._tenant_allows(request, None, self.writers)
        return super().has_add_permission(request, *args) if allowed is None else allowed

    def has_change_permission(self, request, obj=None):
        allowed = self._tenant_allows(request, obj, self.writers, write=True)
        return super().has_change_permission(request, obj) if allowed is None else allowed

    def has_delete_permission(self, request, obj=None):
        allowed = self._tenant_allows(request, obj, self.writers, write=True)
        return super().has_delete_permission(request, obj) if allowed is None else allowed

    # --- related choices ------------------------------------------------------------------------------------

    def get_form(self, request, obj=None, change=False, **kwargs):
        # the object's license narrows the related choices built for this form (see _choices)
        request._admin_form_license_id = self.license_id_of(obj) if obj is not None else None
        return super().get_form(request, obj, change=change, **kwargs)

    def related_queryset(self, request, model):
        """`model`'s rows that this form may offer: the admin user's licenses, and the edited object's."""
        queryset = model._default_manager.all()
        q = scope_q(request, model, getattr(request, "_admin_form_license_id", None))
        return queryset if q is None else queryset.filter(q)

    def related_widget(self, request, db_field, *, multiple=False):
        cls = LicenseAutocompleteSelectMultiple if multiple else LicenseAutocompleteSelect
        return cls(db_field, self.admin_site, license_id=getattr(request, "_admin_form_license_id", None))

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == self.license_field and db_field.related_model is License:
            # a new row goes only to a license where this person writes these rows
            ids = admin_license_ids(request, self.writers)
            if ids is not None:
                kwargs.setdefault("queryset", License.objects.filter(pk__in=ids))
        if license_path(db_field.related_model) is not None:
            kwargs.setdefault("queryset", self.related_queryset(request, db_field.related_model))
            if db_field.name in self.get_autocomplete_fields(request):
                kwargs.setdefault("widget", self.related_widget(request, db_field))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        if license_path(db_field.related_model) is not None:
            kwargs.setdefault("queryset", self.related_queryset(request, db_field.related_model))
            if db_field.name in self.get_autocomplete_fields(request):
                kwargs.setdefault("widget", self.related_widget(request, db_field, multiple=True))
        if not db_field.remote_field.through._meta.auto_created:
            # Django's admin leaves out relations with their own link model (TicketTeam), because it could not
            # fill the link's other columns. Admins that show one write it through a service (ServiceAdmin).
            return db_field.formfield(**kwargs)
        return super().formfield_for_manytomany(db_field, request, **kwargs)


class ReadOnlyLicenseScopedAdmin(LicenseScopedAdmin):
    """Records that only their own code writes (ledgers, logs, sent mail): viewed, never edited by hand."""

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
