from accounts.api.views import AgentViewSet, LicenseViewSet, TeamViewSet
from helpdesk.api.routers import ApiRouter

router = ApiRouter()
router.register("licenses", LicenseViewSet, basename="license")
router.register("agents", AgentViewSet, basename="agent")
router.register("teams", TeamViewSet, basename="team")
urlpatterns = router.urls
