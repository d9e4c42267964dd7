"""Read-only admin views of the billing ledger: money changes only through billing.services."""

from django.contrib import admin

from billing.models import Charge, IdempotencyRecord, Subscription


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Subscription)
class SubscriptionAdmin(ReadOnlyAdmin):
    list_display = ("id", "license", "state", "plan_code", "quantity", "current_period_ends_at", "is_trial")
    list_filter = ("state", "plan_code", "is_trial")
    search_fields = ("id", "license__id")


@admin.register(Charge)
class ChargeAdmin(ReadOnlyAdmin):
    list_display = ("id", "license", "subscription", "reason", "amount", "currency", "status", "created_at")
    list_filter = ("status", "reason")
    search_fields = ("id", "idempotency_key", "gateway_reference")


@admin.register(IdempotencyRecord)
class IdempotencyRecordAdmin(ReadOnlyAdmin):
    list_display = ("key", "license", "status", "created_at", "completed_at")
