from helpdesk.api.routers import ApiRouter
from tickets.api.views import TagViewSet, TicketViewSet, TransactionViewSet

router = ApiRouter()
router.register("tickets", TicketViewSet, basename="ticket")
router.register("tags", TagViewSet, basename="tag")
router.register("transactions", TransactionViewSet, basename="transaction")
urlpatterns = router.urls
