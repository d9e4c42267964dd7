"""`{% helpdesk_dashboard %}` on the admin index (templates/admin/helpdesk_index.html): the signed-in user's
licenses' panels (tickets/admin/dashboard.py), scoped as every admin page is (accounts/admin/tenancy.py)."""

from django import template
from django.utils import timezone

from helpdesk.api.permissions import OWNERS

register = template.Library()


@register.inclusion_tag("admin/helpdesk_dashboard.html", takes_context=True)
def helpdesk_dashboard(context):
    # The admin modules are imported here, not with the library: `manage.py check` loads every tag library (the
    # templates check) in an order of checks that varies between processes, and importing the admin then
    # registered some admins before the admin's autodiscovery, so the admin check could meet LicenseAdmin
    # pointing at a Template admin not registered yet (admin.E039).
    from accounts.admin.tenancy import admin_license_ids
    from tickets.admin.charts import created_solved_chart
    from tickets.admin.dashboard import DAYS, dashboard

    request = context["request"]
    only = request.GET.get("license", "")
    data = dashboard(admin_license_ids(request), only=int(only) if only.isdigit() else None)
    owned = admin_license_ids(request, OWNERS)  # deliveries and purges: the owners' (as the API's webhooks)
    for panel in data.panels:
        panel.chart = created_solved_chart(panel.days)
        panel.operations = owned is None or panel.license.pk in owned
    return {"dashboard": data, "days": DAYS, "superuser": request.user.is_superuser, "now": timezone.now()}
