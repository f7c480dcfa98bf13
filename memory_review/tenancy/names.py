"""Who did it, as a person reads it: a name for `user:2`, never the id."""

from collections.abc import Iterable

from django.contrib.auth import get_user_model


def display_name(user) -> str:
    return user.get_full_name() or user.username


def actor_names(actors: Iterable[str | None]) -> dict[str, str]:
    """Display names for actor strings (`user:<id>`, `policy:<version>`, `system:<job>`,
    `agent:<name>`), people looked up in one query."""
    actors = {actor for actor in actors if actor}
    user_ids = {
        int(actor.split(":", 1)[1])
        for actor in actors
        if actor.startswith("user:") and actor.split(":", 1)[1].isdigit()
    }
    users = {user.pk: user for user in get_user_model().objects.filter(pk__in=user_ids)} if user_ids else {}
    names = {}
    for actor in actors:
        kind, _, name = actor.partition(":")
        if kind == "user" and name.isdigit() and int(name) in users:
            names[actor] = display_name(users[int(name)])
        elif kind == "policy":
            names[actor] = f"policy {name}"
        elif kind in ("system", "job"):
            names[actor] = f"{name} (automatic)"
        elif kind == "agent":
            names[actor] = f"agent {name}"
        else:
            names[actor] = actor  # a removed user, or a name written before these rules
    return names
