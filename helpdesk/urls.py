from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularRedocView

from accounts.oauth.urls_oauth import account_patterns, oauth_patterns
from helpdesk.api.schema_view import SchemaView

admin.autodiscover()  # settings install SimpleAdminConfig: the admin modules load with the URLs, not at start-up
admin.site.site_header = "HelpDesk admin"
admin.site.site_title = "HelpDesk admin"
admin.site.index_title = "Support administration"
admin.site.site_url = "/v1/docs"  # "View site": the API's reference, for agents who script
admin.site.index_template = "admin/helpdesk_index.html"  # the dashboard (tickets/templatetags/dashboard.py)

handler404 = "helpdesk.api.errors.handler404"
handler500 = "helpdesk.api.errors.handler500"

# URL resolution tries the patterns in order, and every include that does not match builds Django's list of
# what it tried: the tickets (the API's hottest resource: its search) come first, as does `v1/`; no two
# includes here share a path, and the OpenAPI document sorts its paths. Measured (bench/README.md, issue 34,
# `search3` branch, bench/cpu.py --instructions): the inbox search 4.36 M -> 4.12 M instructions.
api_v1 = [
    path("", include("tickets.api.urls")),
    path("openapi.json", SchemaView.as_view(), name="openapi"),
    path(
        "docs",
        SpectacularRedocView.as_view(url_name="openapi", template_name="helpdesk/redoc.html"),
        name="docs",
    ),
    path("", include("accounts.api.urls")),
    path("", include("templates_app.api.urls")),
    path("", include("billing.api.urls")),
    path("", include("audit.api.urls")),
    path("", include("accounts.oauth.urls")),
]

urlpatterns = [
    path("v1/", include(api_v1)),
    # the console's sign-in page offers "Forgotten your password?" under this name: the e-mailed reset
    path(
        "admin/password_reset/",
        RedirectView.as_view(pattern_name="password_reset"),
        name="admin_password_reset",
    ),
    path("admin/", admin.site.urls),
    path("oauth/", include(oauth_patterns)),
    path("accounts/", include(account_patterns)),
    path("", include("templates_app.pages")),  # the pages e-mailed links open
    path("", include("templates_app.contact_form_pages")),  # contact forms: /forms/<ID>, embed.js
]
