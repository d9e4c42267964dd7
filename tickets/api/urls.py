from helpdesk.api.routers import ApiRouter
from tickets.api.views import TagViewSet, TicketViewSet, TransactionViewSet
from tickets.custom_fields.api import CustomFieldViewSet
from tickets.saved_views.api import ViewViewSet
from tickets.webhooks.api import WebhookViewSet

router = ApiRouter()
router.register("tickets", TicketViewSet, basename="ticket")
router.register("tags", TagViewSet, basename="tag")
router.register("transactions", TransactionViewSet, basename="transaction")
router.register("webhooks", WebhookViewSet, basename="webhook")
router.register("views", ViewViewSet, basename="view")
router.register("customFields", CustomFieldViewSet, basename="custom-field")
urlpatterns = router.urls
