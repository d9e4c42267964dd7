"""Admin: templates are written through the services (same rules as the API), with a preview rendered by
the one renderer; sent mail and invitations are read-only. All of it scoped to the admin user's licenses."""

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.db.models import Count, Max
from django.http import Http404, HttpResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from accounts.admin.tenancy import LicenseScopedAdmin, ReadOnlyLicenseScopedAdmin, ScopedRelatedListFilter
from helpdesk.api.permissions import OWNERS
from helpdesk.errors import DomainError
from templates_app import contact_forms, domains, mail, mailboxes, reply_addresses, senders, services
from templates_app.models import (
    BlockedSender,
    ContactForm,
    EmailDomain,
    InboundMessage,
    Invitation,
    Mailbox,
    OutboundMessage,
    ReplyAddress,
    Template,
    TrustedSender,
)
from templates_app.rendering import render
from tickets.admin import dashboard


class TemplateForm(forms.ModelForm):
    class Meta:
        model = Template
        fields = ("license", "name", "type", "content")
        widgets = {
            "content": forms.Textarea(attrs={"rows": 12, "cols": 90, "style": "font-family: monospace"})
        }
        help_texts = {
            "content": 'JSON: {"text": "...", "html": "...", "appearance": {"textColor": {"type": "color", '
            '"value": "#1f2328"}}}; placeholders such as {{requester.name}} and {{ticket.subject}}.'
        }

    def clean_content(self):
        from templates_app.api.serializers import ContentSerializer

        serializer = ContentSerializer(data=self.cleaned_data["content"])
        if not serializer.is_valid():
            raise forms.ValidationError(f"Invalid content: {serializer.errors}")
        return dict(serializer.validated_data)


@admin.register(Template)
class TemplateAdmin(LicenseScopedAdmin):
    form = TemplateForm
    list_display = ("name", "license", "type", "is_default", "updated_at")
    list_select_related = ("license",)
    list_filter = ("type", ("license", ScopedRelatedListFilter))
    search_fields = ("name",)
    ordering = ("license", "name")
    autocomplete_fields = ("license",)
    stamps = ("created_at", "created_by", "created_by_type", "updated_at", "updated_by")

    def get_fieldsets(self, request, obj=None):
        fieldsets = [(None, {"fields": ("license", "name", "type", "content")})]
        if obj is not None:
            fieldsets.append(("Preview (sample data)", {"fields": ("preview_html", "preview_text")}))
            fieldsets.append(("Stamps", {"classes": ("collapse",), "fields": self.stamps}))
        return fieldsets

    def get_readonly_fields(self, request, obj=None):
        return ("license", "type", "preview_html", "preview_text", *self.stamps) if obj else ()

    def _rendered(self, obj):
        if not hasattr(obj, "_preview"):
            logo = mail.logo(obj)
            obj._preview = render(
                type=obj.type,
                content=obj.content,
                context=mail.sample_context(license=obj.license),
                powered_by=mail.powered_by(obj.license),
                logo_cid=mail.cid(logo) if logo else None,
            )
        return obj._preview

    @admin.display(description="HTML")
    def preview_html(self, obj):
        # sanitized by the renderer, and shown in a sandboxed frame without scripts or same-origin access
        return format_html(
            '<iframe sandbox="" title="HTML preview" srcdoc="{}" '
            'style="width: 100%; min-width: 600px; height: 360px; border: 1px solid #ccc; background: #fff">'
            "</iframe>",
            self._rendered(obj).html,
        )

    @admin.display(description="Text")
    def preview_text(self, obj):
        return format_html("<pre style='white-space: pre-wrap'>{}</pre>", self._rendered(obj).text)

    @admin.display(boolean=True, description="default")
    def is_default(self, obj):
        return obj.license.default_template_id == obj.pk

    def save_model(self, request, obj, form, change):
        if change:
            saved = services.template_update(template=obj, name=obj.name, content=obj.content)
        else:
            saved = services.template_create(
                license=obj.license, name=obj.name, content=obj.content, type=obj.type
            )
        obj.pk = saved.pk

    def delete_object(self, request, obj):
        services.template_delete(template=obj)


@admin.register(OutboundMessage)
class OutboundMessageAdmin(ReadOnlyLicenseScopedAdmin):
    readers = OWNERS  # the mail log, for those who run the desk
    list_display = ("to", "kind", "subject", "status", "attempts", "license", "created_at", "sent_at")
    list_select_related = ("license",)
    list_filter = ("status", "kind", ("license", ScopedRelatedListFilter))
    search_fields = ("to", "subject")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    exclude = ("text", "html", "attachments")  # invitation e-mails carry live links


@admin.register(Invitation)
class InvitationAdmin(ReadOnlyLicenseScopedAdmin):
    readers = OWNERS
    list_display = ("agent", "license", "created_at", "accepted_at", "revoked_at")
    list_select_related = ("agent", "license")
    list_filter = (("license", ScopedRelatedListFilter),)
    search_fields = ("agent__email",)
    ordering = ("-created_at",)

    def has_delete_permission(self, request, obj=None):
        # Never deleted by hand, but they go with their agent: deleting an invited agent (every new agent is,
        # issue 36) must not be refused for the invitation its deletion takes along.
        if obj is None:
            return False
        return LicenseScopedAdmin.has_delete_permission(self, request, obj)


@admin.register(ReplyAddress)
class ReplyAddressAdmin(LicenseScopedAdmin):
    """Added through the service (which e-mails the confirmation link); verified only by that link."""

    list_display = ("email", "name", "license", "verified_at", "created_at")
    list_select_related = ("license",)
    list_filter = (("license", ScopedRelatedListFilter),)
    search_fields = ("email", "name")
    ordering = ("license", "email")
    autocomplete_fields = ("license",)
    fields = ("license", "email", "name", "verified_at", "created_at", "created_by")

    def has_change_permission(self, request, obj=None):
        return obj is None and super().has_change_permission(request, obj)

    def get_readonly_fields(self, request, obj=None):
        return ("verified_at", "created_at", "created_by") if obj is None else self.fields

    def save_model(self, request, obj, form, change):
        obj.pk = reply_addresses.reply_address_create(license=obj.license, email=obj.email, name=obj.name).pk

    def delete_object(self, request, obj):
        reply_addresses.reply_address_delete(address=obj)


@admin.register(InboundMessage)
class InboundMessageAdmin(ReadOnlyLicenseScopedAdmin):
    readers = OWNERS
    """Received mail as it came (for support): what became of it, and the raw message to view or download."""

    list_display = (
        "created_at",
        "sender",
        "subject",
        "kind",
        "ticket_link",
        "auto_reply_allowed",
        "license",
    )
    list_select_related = ("license", "ticket")
    list_filter = ("kind", "auto_reply_allowed", ("license", ScopedRelatedListFilter))
    search_fields = ("sender", "subject", "message_id")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    exclude = ("raw",)
    readonly_fields = ("raw_message",)

    def get_urls(self):
        urls = [
            path(
                "<path:object_id>/raw/",
                self.admin_site.admin_view(self.raw_view),
                name="templates_app_inboundmessage_raw",
            )
        ]
        return urls + super().get_urls()

    def raw_view(self, request, object_id):
        inbound = self.get_object(request, unquote(object_id))  # scoped: another license's mail is a 404
        if inbound is None or not self.has_view_permission(request, inbound):
            raise Http404("No such message.")
        with inbound.raw.open("rb") as file:
            raw = file.read()
        if request.GET.get("download"):
            response = HttpResponse(raw, content_type="message/rfc822")
            response["Content-Disposition"] = f'attachment; filename="{inbound.pk}.eml"'
            return response
        # shown as text, never rendered: the mail's HTML must not run in the admin's origin
        response = HttpResponse(
            raw.decode("utf-8", errors="replace"), content_type="text/plain; charset=utf-8"
        )
        response["Content-Security-Policy"] = "default-src 'none'; sandbox"
        return response

    @admin.display(description="ticket")
    def ticket_link(self, obj):
        if not obj.ticket_id:
            return "-"
        url = reverse("admin:tickets_ticket_change", args=[obj.ticket_id])
        return format_html('<a href="{}">#{}</a>', url, obj.ticket.short_id)

    @admin.display(description="raw message")
    def raw_message(self, obj):
        url = reverse("admin:templates_app_inboundmessage_raw", args=[obj.pk])
        return format_html('<a href="{}">view</a> · <a href="{}?download=1">download (.eml)</a>', url, url)


class _SenderAdmin(LicenseScopedAdmin):
    """A list of senders (an address or a whole domain): added and deleted through templates_app.senders."""

    list_display = ("email", "license", "created_at")
    list_select_related = ("license",)
    list_filter = (("license", ScopedRelatedListFilter),)
    search_fields = ("email",)
    ordering = ("license", "email")
    autocomplete_fields = ("license",)
    fields = ("license", "email")
    create = delete = None  # the services, set by each list

    def get_readonly_fields(self, request, obj=None):
        return ("license", "email") if obj else ()

    def save_model(self, request, obj, form, change):
        if not change:
            obj.pk = type(self).create(license=obj.license, email=obj.email).pk

    def delete_model(self, request, obj):
        type(self).delete(obj)


@admin.register(BlockedSender)
class BlockedSenderAdmin(_SenderAdmin):
    """Senders (or whole domains) whose mail goes to the spam silo."""

    create = staticmethod(senders.blocked_sender_create)
    delete = staticmethod(lambda obj: senders.blocked_sender_delete(blocked=obj))


@admin.register(TrustedSender)
class TrustedSenderAdmin(_SenderAdmin):
    """Senders (or whole domains) whose mail is never marked spam, unless also blocked."""

    create = staticmethod(senders.trusted_sender_create)
    delete = staticmethod(lambda obj: senders.trusted_sender_delete(trusted=obj))


class ContactFormForm(forms.ModelForm):
    class Meta:
        model = ContactForm
        fields = ("license", "name", "team", "fields", "active")
        help_texts = {
            "fields": 'The questions besides e-mail, name, subject and message: [{"key": "phone", "label": '
            '"Phone", "type": "text|textarea|email|customField", "required": false, "customFieldKey": ...}]',
            "team": "Where its tickets land (empty: the license's default team).",
        }


@admin.register(ContactForm)
class ContactFormAdmin(LicenseScopedAdmin):
    """Public forms whose posts become tickets; written through templates_app.contact_forms. The page's address
    and the HTML to embed it are shown on the form."""

    form = ContactFormForm
    list_display = ("name", "license", "active", "public_url", "updated_at")
    list_select_related = ("license",)
    list_filter = (("license", ScopedRelatedListFilter), "active")
    search_fields = ("name",)
    ordering = ("license", "name")
    autocomplete_fields = ("license", "team")
    readonly_fields = (
        "public_url", "embed_code", "created_at", "created_by", "created_by_type", "updated_at", "updated_by",
    )  # fmt: skip
    service_field_names = {"teamID": "team", "name": "name"}

    @admin.display(description="public page")
    def public_url(self, obj):
        url = contact_forms.public_url(obj)
        return format_html('<a href="{}" target="_blank" rel="noopener">{}</a>', url, url)

    @admin.display(description="embed code (paste into a web page)")
    def embed_code(self, obj):
        return format_html("<code>{}</code>", contact_forms.embed_code(obj))

    def get_fields(self, request, obj=None):
        if obj is not None:
            return ("name", "team", "fields", "active", *self.readonly_fields)
        return ("license", "name", "team", "fields", "active")

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        values = {"name": data["name"], "team": data.get("team"), "fields": data.get("fields") or []}
        if change:
            contact_forms.contact_form_update(contact_form=obj, active=data["active"], **values)
            return
        obj.pk = contact_forms.contact_form_create(
            license=data["license"], active=data["active"], **values
        ).pk

    def delete_object(self, request, obj):
        contact_forms.contact_form_delete(contact_form=obj)


class MailboxForm(forms.ModelForm):
    # write-only, as in the API: left empty, the stored password is kept
    imap_password = forms.CharField(
        label="IMAP password", required=False, widget=forms.PasswordInput(render_value=False)
    )
    imap_security = forms.ChoiceField(
        label="IMAP security", required=False, choices=[("", "-"), ("ssl", "ssl"), ("starttls", "starttls")]
    )

    class Meta:
        model = Mailbox
        fields = (
            "license", "name", "email", "team", "reply_address", "disabled", "imap_host", "imap_port",
            "imap_security", "imap_username", "imap_password", "imap_folder",
        )  # fmt: skip


@admin.register(Mailbox)
class MailboxAdmin(LicenseScopedAdmin):
    """Support addresses; written through templates_app.mailboxes (as the API); the IMAP password is write-only."""

    form = MailboxForm
    list_display = ("name", "email", "license", "team", "imap_host", "disabled", "created_at")
    list_select_related = ("license", "team")
    list_filter = (("license", ScopedRelatedListFilter),)
    search_fields = ("name", "email")
    ordering = ("license", "name")
    autocomplete_fields = ("license",)
    readonly_fields = ("inbound_address", "poll_state")

    def get_fields(self, request, obj=None):
        fields = list(MailboxForm.Meta.fields)
        return fields if obj is None else [f for f in fields if f != "license"] + list(self.readonly_fields)

    @admin.display(description="state")
    def poll_state(self, obj):
        state = getattr(obj, "state", None)
        if state is None or not obj.imap_host:
            return "-"
        return (
            "failing: " + state.last_error if state.failing else f"fetched {state.last_fetched_at or 'never'}"
        )

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        imap = None
        if data.get("imap_host"):
            imap = {
                "host": data["imap_host"],
                "port": data.get("imap_port"),
                "security": data.get("imap_security") or "ssl",
                "username": data.get("imap_username") or "",
                "password": data.get("imap_password") or "",
                "folder": data.get("imap_folder") or "",
            }
        fields = {
            "name": data["name"],
            "email": data["email"],
            "team": data.get("team"),
            "reply_address": data.get("reply_address"),
            "imap": imap,
            "status": "disabled" if data.get("disabled") else "active",
        }
        if change:
            mailboxes.mailbox_update(mailbox=Mailbox.objects.get(pk=obj.pk), **fields)
        else:
            obj.pk = mailboxes.mailbox_create(license=data["license"], **fields).pk

    def delete_object(self, request, obj):
        mailboxes.mailbox_delete(mailbox=obj)


@admin.register(EmailDomain)
class EmailDomainAdmin(LicenseScopedAdmin):
    """Customers' own mail domains: added, renamed, verified and deleted through templates_app.domains (the
    private key is never shown)."""

    list_display = ("name", "license", "status", "verified_at", "created_at")
    list_select_related = ("license",)
    list_filter = (("license", ScopedRelatedListFilter), "status")
    search_fields = ("name",)
    ordering = ("license", "name")
    autocomplete_fields = ("license",)
    fields = ("license", "name", "status", "selector", "dns_records", "verified_at", "last_check")
    readonly_fields = ("status", "selector", "dns_records", "verified_at", "last_check")
    actions = ["verify_selected"]

    def get_readonly_fields(self, request, obj=None):
        return ("license", *self.readonly_fields) if obj else ("status",)

    def get_fields(self, request, obj=None):
        return self.fields if obj else ("license", "name")

    @admin.display(description="DNS records to publish")
    def dns_records(self, obj):
        rows = format_html_join(
            "", "<tr><td>TXT</td><td><code>{}</code></td><td><code>{}</code></td></tr>",
            ((r.name, r.value) for r in domains.records(obj)),
        )  # fmt: skip
        return format_html("<table>{}</table>", rows)

    def save_model(self, request, obj, form, change):
        if change:
            domains.email_domain_update(email_domain=obj, name=form.cleaned_data["name"])
        else:
            obj.pk = domains.email_domain_create(license=obj.license, name=obj.name).pk

    def delete_object(self, request, obj):
        domains.email_domain_delete(email_domain=obj)

    @admin.action(description="Verify the DNS records of the selected domains")
    def verify_selected(self, request, queryset):
        for domain in queryset:
            try:
                domain = domains.email_domain_verify(email_domain=domain)
            except DomainError as exc:
                self.message_user(request, f"{domain.name}: {exc.message}", level="error")
            else:
                self.message_user(request, f"{domain.name}: {domain.status}")


def mail_failures(panels, license_ids) -> None:
    """The admin index dashboard's failed mail per license (tickets/admin/dashboard.py), in one query."""
    rows = (
        OutboundMessage.objects.filter(license_id__in=license_ids, status=OutboundMessage.STATUS_FAILED)
        .values("license_id")
        .annotate(n=Count("id"), last=Max("created_at"))
    )
    for row in rows:
        panel = panels[row["license_id"]]
        panel.mail_failures, panel.last_mail_failure = row["n"], row["last"]


dashboard.register_part(mail_failures)
