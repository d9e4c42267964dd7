from django.urls import path

from accounts.api.views import AgentViewSet, LicenseViewSet, TeamViewSet
from accounts.attachments import AttachmentDownloadView
from helpdesk.api.routers import ApiRouter

router = ApiRouter()
router.register("licenses", LicenseViewSet, basename="license")
router.register("agents", AgentViewSet, basename="agent")
router.register("teams", TeamViewSet, basename="team")
urlpatterns = [
    *router.urls,
    path("attachments/<str:token>/<path:name>", AttachmentDownloadView.as_view(), name="attachment-download"),
]
