from accounts.oauth.api import AppViewSet, GrantViewSet
from helpdesk.api.routers import ApiRouter

router = ApiRouter()
# Before `apps`, whose `{appID}` would otherwise take `grants`.
router.register("apps/grants", GrantViewSet, basename="app-grant")
router.register("apps", AppViewSet, basename="app")
urlpatterns = router.urls
