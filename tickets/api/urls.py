from helpdesk.api.routers import ApiRouter
from tickets.api.views import TagViewSet, TicketViewSet, TransactionViewSet
from tickets.reports.api import ReportViewSet
from tickets.webhooks.api import WebhookViewSet

router = ApiRouter()
router.register("tickets", TicketViewSet, basename="ticket")
router.register("tags", TagViewSet, basename="tag")
router.register("transactions", TransactionViewSet, basename="transaction")
router.register("webhooks", WebhookViewSet, basename="webhook")
router.register("reports", ReportViewSet, basename="report")
urlpatterns = router.urls
