"""Identities in the seal (issue 27, item 2; docs/audit.md, "Who may act").

A person acts through their user row: whoever can write it (reset a password hash, make someone
superuser, swap two usernames, reactivate a lead) can act as anyone. So a user's identity, its
username, password hash, names, active, staff and superuser flags, groups and permissions (direct
and through its groups), is sealed like the rows decisions rest on, in the ledger of every tenant
where it counts: each tenant it is a member of, and every tenant while it is staff or superuser.
Django's own paths (a password change, the admin, createsuperuser, a hasher upgrade at sign-in)
write through the model, and the signals below seal what they wrote in the same transaction.

A sign-in is sealed too (kind `signin`), with the digest of the identity it signed in with, read
from the database at that moment. Verification replays each tenant's ledger: every sign-in must
carry the digest its user's seal held then. A password hash reset around the application, used
to sign in and put back, leaves the current row matching its seal but that sign-in not matching
it, and the sign-in (with the two-person requests its user asked or confirmed after it) is named.

Users are not tenant rows, so this module finds the tenancy's models through the app registry and
seals into each tenant's ledger with `seals.append`, which names the tenant for row-level security.
"""

import hashlib
import hmac
import logging
from collections import defaultdict
from collections.abc import Iterable

from django.apps import apps
from django.contrib.auth import get_user_model, user_logged_in
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.db.models import Q
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_delete, pre_save

from memory_review.integrity import seals
from memory_review.integrity.heads import canonical
from memory_review.integrity.keys import keyring

logger = logging.getLogger(__name__)

USER, SIGNIN = "user", "signin"
COLUMNS = ("username", "password", "first_name", "last_name", "is_active", "is_staff", "is_superuser")


# -- what an identity is -----------------------------------------------------------------------


def identities(user_ids: Iterable[int]) -> dict[int, dict]:
    """Each user's identity as the database holds it now (users that no longer exist are absent)."""
    user_ids = list(user_ids)
    users = get_user_model()._base_manager.filter(pk__in=user_ids)
    found = {pk: dict(zip(COLUMNS, values, strict=True)) for pk, *values in users.values_list("pk", *COLUMNS)}
    for fields in found.values():
        fields.update(groups=[], permissions=[], group_permissions=[])
    memberships = get_user_model().groups.through.objects.filter(user_id__in=found)
    group_of = defaultdict(list)
    for user_id, group_id in memberships.values_list("user_id", "group_id"):
        found[user_id]["groups"].append(group_id)
        group_of[group_id].append(user_id)
    direct = get_user_model().user_permissions.through.objects.filter(user_id__in=found)
    for user_id, permission_id in direct.values_list("user_id", "permission_id"):
        found[user_id]["permissions"].append(permission_id)
    granted = Group.permissions.through.objects.filter(group_id__in=group_of)
    for group_id, permission_id in granted.values_list("group_id", "permission_id"):
        for user_id in group_of[group_id]:
            found[user_id]["group_permissions"].append(permission_id)
    for fields in found.values():
        for name in ("groups", "permissions", "group_permissions"):
            fields[name] = sorted(set(fields[name]))
    return found


def digest(user_id: int, tenant_id: int, fields: dict, key: bytes) -> str:
    payload = {"kind": USER, "id": user_id, "tenant_id": tenant_id, "fields": fields}
    return hmac.new(key, canonical(payload), hashlib.sha256).hexdigest()


def privileged_ids() -> set[int]:
    """Users who count in every tenant: staff reach the admin, superusers everything."""
    people = get_user_model()._base_manager.filter(Q(is_staff=True) | Q(is_superuser=True))
    return set(people.values_list("pk", flat=True))


def counted(tenant_id: int) -> set[int]:
    """The users whose identities a tenant's verification holds to their seals."""
    members = apps.get_model("tenancy", "Membership").objects.filter(tenant_id=tenant_id)
    return set(members.values_list("user_id", flat=True)) | privileged_ids()


def _tenants_of(user_ids: set[int], *, everywhere: bool) -> list[int]:
    tenants = apps.get_model("tenancy", "Tenant")._base_manager
    if everywhere:
        return list(tenants.order_by("pk").values_list("pk", flat=True))
    members = apps.get_model("tenancy", "Membership").objects.filter(user_id__in=user_ids)
    return sorted(set(members.values_list("tenant_id", flat=True)))


# -- writing -------------------------------------------------------------------------------------


def _left_digest(user_id: int, tenant_id: int, key: bytes) -> str:
    """A user who stopped counting in a tenant through the application: a membership removed, a
    staff or superuser flag taken away (so one removed around it is named)."""
    payload = {"kind": USER, "id": user_id, "tenant_id": tenant_id, "fields": {"left": True}}
    return hmac.new(key, canonical(payload), hashlib.sha256).hexdigest()


def _deleted_digest(user_id: int, tenant_id: int, key: bytes) -> str:
    payload = {"kind": USER, "id": user_id, "tenant_id": tenant_id, "fields": seals.DELETED_DIGEST_FIELDS}
    return hmac.new(key, canonical(payload), hashlib.sha256).hexdigest()


def seal(user_ids: Iterable[int], action: str, *, everywhere: bool = False) -> None:
    """Seal these users' identities, as the database now holds them, in the ledger of every tenant
    where they count (all tenants when `everywhere`, or when one of them is staff or superuser)."""
    user_ids = set(user_ids)
    if not user_ids:
        return
    found = identities(user_ids)
    everywhere = everywhere or any(f["is_staff"] or f["is_superuser"] for f in found.values())
    ring = keyring()
    key = ring.key(ring.current)
    with transaction.atomic(savepoint=False):
        for tenant_id in _tenants_of(user_ids, everywhere=everywhere):
            entries = [
                (USER, pk, action, digest(pk, tenant_id, found[pk], key))
                for pk in sorted(user_ids)
                if pk in found
            ]
            if entries:
                seals.append(tenant_id, entries, ring=ring)


def seal_left(user_id: int, tenant_ids: Iterable[int]) -> None:
    ring = keyring()
    key = ring.key(ring.current)
    for tenant_id in tenant_ids:
        entry = (USER, user_id, seals.CHANGE, _left_digest(user_id, tenant_id, key))
        seals.append(tenant_id, [entry], ring=ring)


def seal_deleted(user_ids: Iterable[int]) -> None:
    """A deleted user, in every tenant's ledger (it may be sealed in one it has since left)."""
    ring = keyring()
    key = ring.key(ring.current)
    with transaction.atomic(savepoint=False):
        for tenant_id in _tenants_of(set(), everywhere=True):
            entries = [
                (USER, pk, seals.DELETE, _deleted_digest(pk, tenant_id, key)) for pk in sorted(user_ids)
            ]
            seals.append(tenant_id, entries, ring=ring)


def seal_into(tenant_id: int, user_ids: Iterable[int], action: str = seals.CREATE) -> None:
    """These users' identities in one tenant's ledger (a new member, or a new tenant's staff). A
    user whose row no longer matches its seal in another tenant is not sealed here (that would
    vouch for the change): verification names them."""
    user_ids = sorted(set(user_ids))
    found = identities(user_ids)
    ring = keyring()
    key = ring.key(ring.current)
    entries = [
        (USER, pk, action, digest(pk, tenant_id, found[pk], key))
        for pk in user_ids
        if pk in found and not tampered(pk, besides=tenant_id)
    ]
    if entries:
        seals.append(tenant_id, entries, ring=ring)


# -- at the moment of acting -----------------------------------------------------------------------


def unsealed(user_id: int, tenant_id: int, *, found: dict | None = None) -> str | None:
    """Whether the user's identity, as the database holds it now (`found`, when just read), is not
    the one last sealed in this tenant: what is wrong, or None. Asked before a person acts (the
    workspace's writes, the two-person rule), so credentials borrowed around the application act
    for no one."""
    ring = keyring()
    found = found if found is not None else identities([user_id]).get(user_id)
    latest = seals.latest_seal(tenant_id, USER, user_id)
    if found is None:
        return "the account does not exist"
    if latest is None:
        return "the account has no seal here"
    action, sealed, key_id = latest
    key = ring.key(key_id)
    if (
        action == seals.DELETE
        or key is None
        or hmac.compare_digest(sealed, _left_digest(user_id, tenant_id, key))
    ):
        return "the account does not count here by its seal"
    if not hmac.compare_digest(sealed, digest(user_id, tenant_id, found, key)):
        return "the account was changed around the application (password, flags, name, groups or permissions)"
    return None


def tampered(user_id: int, *, besides: int | None = None) -> bool:
    """Whether the user's row differs from its seal in any tenant it counts in (other than
    `besides`): asked before a write through the application, so that write does not vouch for it."""
    found = identities([user_id]).get(user_id)
    if found is None:
        return False
    everywhere = found["is_staff"] or found["is_superuser"]
    return any(
        unsealed(user_id, tenant_id, found=found) is not None
        for tenant_id in _tenants_of({user_id}, everywhere=everywhere)
        if tenant_id != besides
    )


# -- Django's paths: the signals -----------------------------------------------------------------


def _user_saving(sender, instance, raw=False, update_fields=None, **kwargs):
    """Before a write: whether the row was already changed around the application (a hasher's
    upgrade at sign-in must not seal a password hash someone planted), and whether it was staff."""
    if raw or instance.pk is None or (update_fields is not None and not set(update_fields) & set(COLUMNS)):
        return
    instance._identity_tampered = tampered(instance.pk)
    old = (
        get_user_model()._base_manager.filter(pk=instance.pk).values_list("is_staff", "is_superuser").first()
    )
    instance._identity_was_privileged = bool(old and any(old))


def _user_saved(sender, instance, created, update_fields=None, raw=False, **kwargs):
    if raw or (update_fields is not None and not set(update_fields) & set(COLUMNS)):
        return  # a fixture load, or a write of what is not sealed (last_login at every sign-in)
    if getattr(instance, "_identity_tampered", False):
        logger.warning(
            "user %s was changed around the application before this write: not sealed", instance.pk
        )
        return
    seal([instance.pk], seals.CREATE if created else seals.CHANGE)
    if getattr(instance, "_identity_was_privileged", False) and not (
        instance.is_staff or instance.is_superuser
    ):
        member_of = set(_tenants_of({instance.pk}, everywhere=False))
        seal_left(instance.pk, [t for t in _tenants_of(set(), everywhere=True) if t not in member_of])


def _user_deleting(sender, instance, **kwargs):
    """Their memberships go first, through the sealed path: the cascade would delete them
    without a seal, as a database administrator would."""
    apps.get_model("tenancy", "Membership").objects.filter(user_id=instance.pk).delete()


def _user_deleted(sender, instance, **kwargs):
    seal_deleted([instance.pk])


def _changed_side(sender, instance, action, reverse, pk_set, *, owner: str, other: str) -> set[int] | None:
    """The ids of the owning side (`owner`: a user, or a group for its permissions) whose
    assignments a many-to-many change touches, from either side (`user.groups.add(g)` or
    `group.user_set.add(u)`): noted before the change (a clear from the other side names none),
    returned once it is made; None before."""
    if action.startswith("pre_"):
        if not reverse:
            owners = {instance.pk}
        elif action == "pre_clear":
            owners = set(sender.objects.filter(**{other: instance.pk}).values_list(owner, flat=True))
        else:
            owners = set(pk_set)
        instance._sealed_owners = owners
        return None
    if action not in ("post_add", "post_remove", "post_clear"):
        return None
    return getattr(instance, "_sealed_owners", set())


def _note_tampered(instance, users: Iterable[int]) -> None:
    instance._tampered_users = {user for user in users if tampered(user)}


def _seal_untampered(instance, users: Iterable[int]) -> None:
    skipped = getattr(instance, "_tampered_users", set())
    if skipped:
        logger.warning(
            "users %s were changed around the application before this write: not sealed", sorted(skipped)
        )
    seal(set(users) - skipped, seals.CHANGE)


def _assignments_changed(sender, instance, action, reverse, pk_set, *, other: str) -> None:
    users = _changed_side(sender, instance, action, reverse, pk_set, owner="user_id", other=other)
    if action.startswith("pre_"):
        _note_tampered(instance, getattr(instance, "_sealed_owners", ()))
    elif users is not None:
        _seal_untampered(instance, users)


def _groups_changed(sender, instance, action, reverse, pk_set, **kwargs):
    _assignments_changed(sender, instance, action, reverse, pk_set, other="group_id")


def _user_permissions_changed(sender, instance, action, reverse, pk_set, **kwargs):
    _assignments_changed(sender, instance, action, reverse, pk_set, other="permission_id")


def _members_of(groups: Iterable[int]) -> set[int]:
    members = get_user_model().groups.through.objects.filter(group_id__in=list(groups))
    return set(members.values_list("user_id", flat=True))


def _group_permissions_changed(sender, instance, action, reverse, pk_set, **kwargs):
    """A group's permissions are its users' too: they are sealed again."""
    groups = _changed_side(sender, instance, action, reverse, pk_set, owner="group_id", other="permission_id")
    if action.startswith("pre_"):
        _note_tampered(instance, _members_of(getattr(instance, "_sealed_owners", ())))
    elif groups is not None:
        _seal_untampered(instance, _members_of(groups))


def _holders(instance) -> set[int]:
    """Users a group or permission about to be deleted counts for: the cascade removes their rows
    without a many-to-many signal."""
    if isinstance(instance, Group):
        return _members_of([instance.pk])
    direct = get_user_model().user_permissions.through.objects.filter(permission_id=instance.pk)
    groups = Group.permissions.through.objects.filter(permission_id=instance.pk).values_list(
        "group_id", flat=True
    )
    return set(direct.values_list("user_id", flat=True)) | _members_of(groups)


def _assignment_deleting(sender, instance, **kwargs):
    instance._sealed_owners = _holders(instance)
    _note_tampered(instance, instance._sealed_owners)


def _assignment_deleted(sender, instance, **kwargs):
    _seal_untampered(instance, getattr(instance, "_sealed_owners", ()))


def _membership_saved(sender, instance, created, raw=False, **kwargs):
    if created and not raw:
        seal_into(instance.tenant_id, [instance.user_id])


def _membership_deleted(sender, instance, **kwargs):
    """A member removed through the application no longer counts there, unless staff."""
    found = identities([instance.user_id]).get(instance.user_id)
    if found is not None and not (found["is_staff"] or found["is_superuser"]):
        seal_left(instance.user_id, [instance.tenant_id])


def _tenant_saved(sender, instance, created, raw=False, **kwargs):
    if created and not raw:
        seal_into(instance.pk, privileged_ids())


def _signed_in(sender, request, user, **kwargs):
    seal_signin(user.pk)


def seal_signin(user_id: int) -> None:
    """A sign-in, in each tenant where the user counts: the digest of the identity it signed in
    with, under the key of the user's seal there (so the two compare even across a key rotation)."""
    found = identities([user_id]).get(user_id)
    if found is None:
        return
    ring = keyring()
    with transaction.atomic(savepoint=False):
        for tenant_id in _tenants_of({user_id}, everywhere=found["is_staff"] or found["is_superuser"]):
            latest = seals.latest_seal(tenant_id, USER, user_id)
            key = (ring.key(latest[2]) if latest else None) or ring.key(ring.current)
            entry = (SIGNIN, user_id, seals.CREATE, digest(user_id, tenant_id, found, key))
            seals.append(tenant_id, [entry], ring=ring)


def connect() -> None:
    """From the audit app's ready(): Django's writes of users, groups and sign-ins are sealed."""
    user = get_user_model()
    pre_save.connect(_user_saving, sender=user, dispatch_uid="seal-user-saving")
    post_save.connect(_user_saved, sender=user, dispatch_uid="seal-user-saved")
    for model in (Group, Permission):
        pre_delete.connect(_assignment_deleting, sender=model, dispatch_uid=f"seal-{model.__name__}-deleting")
        post_delete.connect(_assignment_deleted, sender=model, dispatch_uid=f"seal-{model.__name__}-deleted")
    post_delete.connect(
        _membership_deleted, sender=apps.get_model("tenancy", "Membership"), dispatch_uid="seal-member-left"
    )
    pre_delete.connect(_user_deleting, sender=user, dispatch_uid="seal-user-deleting")
    post_delete.connect(_user_deleted, sender=user, dispatch_uid="seal-user-deleted")
    m2m_changed.connect(_groups_changed, sender=user.groups.through, dispatch_uid="seal-user-groups")
    m2m_changed.connect(
        _user_permissions_changed, sender=user.user_permissions.through, dispatch_uid="seal-user-perms"
    )
    m2m_changed.connect(
        _group_permissions_changed, sender=Group.permissions.through, dispatch_uid="seal-group-perms"
    )
    post_save.connect(
        _membership_saved, sender=apps.get_model("tenancy", "Membership"), dispatch_uid="seal-member"
    )
    post_save.connect(
        _tenant_saved, sender=apps.get_model("tenancy", "Tenant"), dispatch_uid="seal-tenant-staff"
    )
    user_logged_in.connect(_signed_in, dispatch_uid="seal-signin")


# -- verification --------------------------------------------------------------------------------


def problem(tenant, ring, *, progress=None) -> str | None:
    """The first identity of this tenant changed, inserted or deleted around the application, or
    the first sign-in made with an identity other than the sealed one; None when all hold."""
    seal_model = apps.get_model("audit", "Seal")
    rows = (
        seal_model.objects.filter(tenant_id=tenant.pk, kind__in=(USER, SIGNIN))
        .order_by("seq")
        .values_list("seq", "kind", "object_id", "action", "digest", "key_id", "created_at")
        .iterator(chunk_size=5000)
    )
    current: dict[int, tuple[int, str, str, str]] = {}  # user id -> its seal's seq, action, digest, key
    for seq, kind, user_id, action, row_digest, key_id, at in rows:
        if progress is not None:
            progress.row()
        if kind == USER:
            current[user_id] = (seq, action, row_digest, key_id)
            continue
        sealed = current.get(user_id)
        if sealed is None or sealed[1] == seals.DELETE or not hmac.compare_digest(sealed[2], row_digest):
            return (
                f"{_name(user_id)} signed in at {at:%Y-%m-%d %H:%M} UTC (seal #{seq}) with an identity "
                f"other than the one sealed: their password, flags or name were changed around the "
                f"application{_acted_after(tenant, user_id, at)}"
            )
    expected = counted(tenant.pk)

    gone = {  # deleted, or left through the application
        user_id
        for user_id, (_, action, row_digest, key_id) in current.items()
        if action == seals.DELETE
        or (
            (key := ring.key(key_id)) is not None
            and hmac.compare_digest(row_digest, _left_digest(user_id, tenant.pk, key))
        )
    }
    found = identities(expected | (current.keys() - gone))
    for user_id in sorted(expected):
        if user_id in found and (user_id not in current or user_id in gone):
            return (
                f"{_name(user_id)} has no seal in this tenant: they were inserted, made staff or "
                "superuser, or made a member around the application"
            )
    for user_id, (seq, _, row_digest, key_id) in sorted(current.items()):
        if user_id in gone:
            continue
        if user_id not in found:
            return f"user {user_id} was deleted around the application (sealed at #{seq})"
        if user_id not in expected:
            return (
                f"{_name(user_id)} no longer counts in this tenant, but was never removed through the "
                f"application (sealed at #{seq}): a membership or a staff or superuser flag was taken "
                "away around it"
            )
        key = ring.key(key_id)
        if key is None:
            return f"user {user_id} is sealed (#{seq}) with key {key_id!r}, which is not in the keyring"
        if not hmac.compare_digest(digest(user_id, tenant.pk, found[user_id], key), row_digest):
            return (
                f"{_name(user_id)} was changed around the application (password, name, active, staff or "
                f"superuser flag, groups or permissions): they no longer match their seal #{seq}"
            )
    return None


def _name(user_id: int) -> str:
    username = get_user_model()._base_manager.filter(pk=user_id).values_list("username", flat=True).first()
    return f"user {username} ({user_id})" if username else f"user {user_id}"


def _acted_after(tenant, user_id: int, at) -> str:
    """The two-person requests this user asked or confirmed after the sign-in: in doubt."""
    requests = apps.get_model("memories", "DualControl").objects.filter(tenant_id=tenant.pk)
    doubtful = requests.filter(
        Q(requested_by_id=user_id, requested_at__gte=at) | Q(decided_by_id=user_id, decided_at__gte=at)
    ).order_by("pk")
    ids = list(doubtful.values_list("pk", flat=True)[:10])
    return (
        f"; two-person requests {', '.join(map(str, ids))} were asked or confirmed by them after it"
        if ids
        else ""
    )
