"""Tenants, memberships and people in Django's admin. Tenants and memberships are read-only
there: their settings and members change through compliance/security.py (the members page,
`manage.py tenant_member`), which keeps the two-person rule. A new tenant can be added, with its
settings chosen once. No one changes another person's password here: a superuser who could
would sign in as a second lead and confirm their own request (`manage.py changepassword` is the
host operator's)."""

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import PermissionDenied

from .models import Membership, Tenant


class ReadOnlyAdmin(admin.ModelAdmin):
    """Shown, never written, in the admin: the rows change through their own audited path."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Tenant)
class TenantAdmin(ReadOnlyAdmin):
    list_display = ("slug", "name", "two_person_rule", "is_active", "created_at")

    def has_add_permission(self, request):
        return True  # a new tenant, its settings chosen once


@admin.register(Membership)
class MembershipAdmin(ReadOnlyAdmin):
    list_display = ("user", "tenant", "role")
    list_filter = ("tenant", "role")


User = get_user_model()
admin.site.unregister(User)


@admin.register(User)
class PersonAdmin(UserAdmin):
    readonly_fields = ("is_superuser", "last_login", "date_joined")

    def user_change_password(self, request, id, form_url=""):
        if str(request.user.pk) != str(id):
            raise PermissionDenied("only the person themselves changes their password here")
        return super().user_change_password(request, id, form_url)
