"""Read-only admin views of the billing ledger: money changes only through billing.services."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from accounts.admin.licenses import LicenseAdmin
from accounts.admin.tenancy import ReadOnlyLicenseScopedAdmin, ScopedRelatedListFilter
from accounts.models import License
from billing.models import Charge, IdempotencyRecord, Subscription
from billing.selectors import license_subscriptions, seat_limit
from billing.services import active_agent_count
from helpdesk.api.permissions import OWNERS

_LICENSE_FILTER = ("license", ScopedRelatedListFilter)


class ChargeInline(admin.TabularInline):
    model = Charge
    fields = ("created_at", "reason", "amount", "currency", "status", "gateway_reference", "completed_at")
    readonly_fields = fields
    ordering = ("-created_at",)
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Subscription)
class SubscriptionAdmin(ReadOnlyLicenseScopedAdmin):
    readers = OWNERS  # as /v1/subscriptions
    list_display = (
        "id", "license", "state", "plan_code", "quantity", "unit_amount_in_cents", "is_trial",
        "current_period_ends_at",
    )  # fmt: skip
    list_select_related = ("license",)
    list_filter = ("state", "plan_code", "is_trial", _LICENSE_FILTER)
    search_fields = ("=id", "=license__id")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)
    inlines = (ChargeInline,)
    fieldsets = (
        (None, {"fields": ("license", "state", "plan_code", "quantity", "unit_amount_in_cents", "is_trial")}),
        (
            "Period",
            {
                "fields": (
                    "period_months",
                    "activated_at",
                    "current_period_started_at",
                    "current_period_ends_at",
                    "trial_started_at",
                    "trial_ends_at",
                    "cancelled_at",
                    "expires_at",
                )  # fmt: skip
            },
        ),
        ("At the next renewal", {"fields": ("pending_plan_code", "pending_quantity", "coupon_code")}),
        (
            "Stamps",
            {
                "classes": ("collapse",),
                "fields": ("charge_in_flight", "created_at", "created_by", "updated_at", "updated_by"),
            },
        ),
    )


@admin.register(Charge)
class ChargeAdmin(ReadOnlyLicenseScopedAdmin):
    superuser_only = True  # the ledger's own machinery: operators only (issue 30)
    list_display = ("created_at", "license", "subscription", "reason", "amount", "currency", "status")
    list_select_related = ("license", "subscription")
    list_filter = ("status", "reason", _LICENSE_FILTER)
    search_fields = ("=id", "idempotency_key", "gateway_reference")
    date_hierarchy = "created_at"
    ordering = ("-created_at",)


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(ReadOnlyLicenseScopedAdmin):
    superuser_only = True
    list_display = ("key", "license", "status", "created_at", "completed_at")
    list_select_related = ("license",)
    list_filter = ("status", _LICENSE_FILTER)
    search_fields = ("key",)
    date_hierarchy = "created_at"
    ordering = ("-created_at",)


class BillingLicenseAdmin(LicenseAdmin):
    """The license page with its Subscription section (billing's data; accounts does not import billing)."""

    readonly_fields = ("subscription_display", "seats_display", *LicenseAdmin.readonly_fields)

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None:
            return fieldsets
        subscription = ("Subscription", {"fields": ("subscription_display", "seats_display")})
        return (fieldsets[0], subscription, *fieldsets[1:])

    @admin.display(description="subscription")
    def subscription_display(self, obj):
        subscription = license_subscriptions([obj.pk]).get(obj.pk)
        if subscription is None:
            return "none (trial allowance)"
        return format_html(
            '<a href="{}">{} × {}, {}</a>{}',
            reverse("admin:billing_subscription_change", args=[subscription.pk]),
            subscription.plan_code,
            subscription.quantity,
            subscription.state,
            f" until {subscription.current_period_ends_at:%Y-%m-%d}"
            if subscription.current_period_ends_at
            else "",
        )

    @admin.display(description="seats in use")
    def seats_display(self, obj):
        return f"{active_agent_count(obj)} of {seat_limit(obj)} (active agents of the paid seats)"


admin.site.unregister(License)
admin.site.register(License, BillingLicenseAdmin)
