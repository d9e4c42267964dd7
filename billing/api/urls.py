from billing.api.views import SubscriptionViewSet
from helpdesk.api.routers import ApiRouter

router = ApiRouter()
router.register("subscriptions", SubscriptionViewSet, basename="subscription")
urlpatterns = router.urls
