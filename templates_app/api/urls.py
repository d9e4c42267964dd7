from django.urls import path

from helpdesk.api.routers import ApiRouter
from templates_app.api.account_actions import AgentInvitationViewSet, LicenseForwardingViewSet
from templates_app.api.contact_forms import ContactFormViewSet
from templates_app.api.domains import EmailDomainViewSet
from templates_app.api.invitations import InvitationAcceptView
from templates_app.api.mailboxes import MailboxViewSet
from templates_app.api.reply_addresses import ReplyAddressViewSet
from templates_app.api.senders import BlockedEmailViewSet, TrustedEmailViewSet
from templates_app.api.views import TemplateViewSet

router = ApiRouter()
router.register("templates", TemplateViewSet, basename="template")
router.register("replyAddresses", ReplyAddressViewSet, basename="reply-address")
router.register("blockedEmails", BlockedEmailViewSet, basename="blocked-email")
router.register("trustedEmails", TrustedEmailViewSet, basename="trusted-email")
router.register("contactForms", ContactFormViewSet, basename="contact-form")
router.register("mailboxes", MailboxViewSet, basename="mailbox")
router.register("emailDomains", EmailDomainViewSet, basename="emaildomain")
# Actions on accounts' licenses and agents (same paths and names as accounts' own routes would give them).
router.register("licenses", LicenseForwardingViewSet, basename="license")
router.register("agents", AgentInvitationViewSet, basename="agent")
urlpatterns = [
    path("invitations/accept", InvitationAcceptView.as_view(), name="invitation-accept"),
    *router.urls,
]
