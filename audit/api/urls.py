from audit.api.views import AuditLogViewSet
from helpdesk.api.routers import ApiRouter

router = ApiRouter()
router.register("auditLog", AuditLogViewSet, basename="auditlog")
urlpatterns = router.urls
