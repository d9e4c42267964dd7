from django.urls import re_path

from helpdesk.api.routers import ApiRouter
from tickets.api.views import TagViewSet, TicketViewSet, TransactionViewSet
from tickets.canned_responses.api import CannedResponseViewSet
from tickets.custom_fields.api import CustomFieldViewSet
from tickets.macros.api import MacroApplicationViewSet, MacroViewSet
from tickets.reports.api import ReportViewSet
from tickets.rules.api import RuleViewSet
from tickets.saved_views.api import ViewViewSet
from tickets.sla.api import BusinessHoursViewSet, SlaPolicyViewSet
from tickets.webhooks.api import WebhookViewSet

router = ApiRouter()
router.register("tickets", TicketViewSet, basename="ticket")
router.register("tags", TagViewSet, basename="tag")
router.register("transactions", TransactionViewSet, basename="transaction")
router.register("webhooks", WebhookViewSet, basename="webhook")
router.register("cannedResponses", CannedResponseViewSet, basename="cannedresponse")
router.register("macros", MacroViewSet, basename="macro")
router.register("rules", RuleViewSet, basename="rule")
router.register("businessHours", BusinessHoursViewSet, basename="business-hours")
router.register("slaPolicies", SlaPolicyViewSet, basename="sla-policy")
router.register("views", ViewViewSet, basename="view")
router.register("customFields", CustomFieldViewSet, basename="custom-field")
router.register("reports", ReportViewSet, basename="report")
urlpatterns = [
    *router.urls,
    re_path(
        r"^tickets/(?P<ticketID>[^/]+)/macros/(?P<macroID>[^/]+)$",
        MacroApplicationViewSet.as_view({"post": "apply"}),
        name="ticket-macro-apply",
    ),
]
