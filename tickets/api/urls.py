from helpdesk.api.routers import ApiRouter

router = ApiRouter()
urlpatterns = router.urls
