from django.urls import path

from helpdesk.api.routers import ApiRouter
from templates_app.api.invitations import InvitationAcceptView
from templates_app.api.reply_addresses import ReplyAddressViewSet
from templates_app.api.views import TemplateViewSet

router = ApiRouter()
router.register("templates", TemplateViewSet, basename="template")
router.register("replyAddresses", ReplyAddressViewSet, basename="reply-address")
urlpatterns = [
    path("invitations/accept", InvitationAcceptView.as_view(), name="invitation-accept"),
    *router.urls,
]
