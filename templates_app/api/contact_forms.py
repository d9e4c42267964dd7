"""`/v1/contactForms` (`GET, POST` · `GET, PATCH, DELETE /{ID}`): owners write, everyone reads.
`{name, teamID, fields: [{key, label, type, required, customFieldKey?}], active, publicURL, embedCode}`
(templates_app.contact_forms; the public page: templates_app.contact_form_pages)."""

from django.core.validators import RegexValidator
from rest_framework import serializers

from accounts.api.serializers import LicensedPrimaryKeyField
from accounts.models import Team
from helpdesk.api.fields import StrictBooleanField, StrictCharField, StrictListField
from helpdesk.api.resources import ResourceViewSet
from helpdesk.api.serializers import StampedOutputSerializer, StrictSerializer
from templates_app import contact_forms
from templates_app.models import ContactForm

FIELDS = ["ID", "licenseID", "name", "teamID", "fields", "active", "publicURL", "embedCode"]


class ContactFormFieldSerializer(StrictSerializer):
    """One question of the form (the customer's e-mail, name, subject and message are always asked)."""

    key = StrictCharField(
        max_length=50,
        validators=[
            RegexValidator(rf"^{contact_forms.KEY.pattern}$", "A letter, then letters, digits, _ or -.")
        ],
        help_text="The input's name: a letter, then letters, digits, _ or -; unique in the form, none of the "
        "built-in names (email, name, subject, message, attachments, website, formToken).",
    )
    label = StrictCharField(max_length=contact_forms.MAX_LABEL, min_length=1)
    type = serializers.ChoiceField(choices=contact_forms.FIELD_TYPES)
    required = StrictBooleanField(required=False, default=False)
    customFieldKey = StrictCharField(
        max_length=100, required=False, help_text="type customField: the apiKey of an active custom field."
    )


class ContactFormSerializer(StampedOutputSerializer):
    ID = serializers.UUIDField(source="pk", read_only=True)
    licenseID = serializers.IntegerField(source="license_id", read_only=True)
    name = serializers.CharField(read_only=True)
    teamID = serializers.UUIDField(source="team_id", read_only=True, allow_null=True)
    fields = ContactFormFieldSerializer(many=True, read_only=True)
    active = serializers.BooleanField(read_only=True)
    publicURL = serializers.SerializerMethodField()
    embedCode = serializers.SerializerMethodField()

    class Meta:
        fields = FIELDS

    def get_publicURL(self, form) -> str:
        return contact_forms.public_url(form)

    def get_embedCode(self, form) -> str:
        return contact_forms.embed_code(form)


class ContactFormWriteSerializer(StrictSerializer):
    name = StrictCharField(max_length=200)
    teamID = LicensedPrimaryKeyField(
        queryset=Team.objects,
        source="team",
        required=False,
        allow_null=True,
        help_text="The team its tickets land in; null: the license's default team.",
    )
    fields = StrictListField(
        child=ContactFormFieldSerializer(), max_length=contact_forms.MAX_FIELDS, required=False
    )
    active = StrictBooleanField(required=False)


class ContactFormViewSet(ResourceViewSet):
    resource_name = "contactForms"
    queryset = ContactForm.objects.order_by("created_at", "id")
    serializer_class = ContactFormSerializer
    write_serializer_class = ContactFormWriteSerializer
    create_service = contact_forms.contact_form_create
    update_service = contact_forms.contact_form_update
    delete_service = contact_forms.contact_form_delete
    lookup_url_kwarg = "contactFormID"
    pagination_class = None  # a license's forms, all of them
    audit_target = "contactForms"
    webhook_events = True
    openapi_tag = (
        "Contact forms",
        "Public pages (/forms/{ID}, embeddable) where customers write in without an account: each post a ticket.",
    )
    noun = ("contact form", "contact forms")
    descriptions = {
        "create": """
            Every form asks for the customer's `email`, `name`, `subject` and `message` (built in) and takes
            optional attachments; `fields` adds questions: `text`, `textarea` and `email` answers are written
            under the message, a `customField` answer (`customFieldKey`: an active custom field of the license
            that the team's tickets carry) sets the ticket's custom field. `teamID` null: the default team.
            `publicURL` is the page; `embedCode` the HTML to paste into a site (a script that inserts the page
            as an iframe).
        """,
    }
