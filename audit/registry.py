"""What is audited: one `register()` call per model says its target, its fields, its secrets and the
many-to-many relations folded into its diff. Everything else (capture, diff, chain) is generic.

    register(Tag, target="tags")
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

from django.db import models

# Recorded in the entry itself (createdAt, author), so they never make a change on their own.
STAMP_FIELDS = frozenset({"created_at", "created_by", "created_by_type", "updated_at", "updated_by"})
REDACTED = "<redacted>"


def api_name(attname: str) -> str:
    """`default_team_id` -> `defaultTeamID`, `job_title` -> `jobTitle` (the API's spelling)."""
    name = re.sub(r"_id$", "_ID", attname)
    head, *rest = name.split("_")
    return head + "".join(part if part.isupper() else part.capitalize() for part in rest)


@dataclasses.dataclass(frozen=True, eq=False)  # hashed by identity: one per model
class Audited:
    model: type[models.Model]
    target: str
    fields: dict[str, str]  # attname -> name in the diff
    secrets: dict[str, str]  # attname -> name in the diff (value never recorded)
    m2m: dict[str, str]  # accessor (forward field or reverse accessor) -> name in the diff
    license_of: Callable[[models.Model], int]
    # A row in a state that is no change yet (a subscription waiting for its charge) is recorded as if absent:
    # its creation is the entry written when it leaves that state.
    hidden: Callable[[models.Model], bool] | None = None


REGISTRY: dict[type[models.Model], Audited] = {}
# (through model, reverse) -> (audited model, accessor): m2m_changed names only the through model.
M2M_INDEX: dict[tuple[type[models.Model], bool], tuple[type[models.Model], str]] = {}


def _license_id(obj) -> int:
    return obj.license_id


def register(
    model: type[models.Model],
    *,
    target: str,
    exclude: tuple[str, ...] = (),
    secrets: tuple[str, ...] = (),
    m2m: dict[str, str] | None = None,
    names: dict[str, str] | None = None,
    license_of: Callable[[models.Model], int] = _license_id,
    hidden: Callable[[models.Model], bool] | None = None,
) -> Audited:
    """Audit `model` under `target`.

    Every concrete field is recorded except the primary key, `license`, the stamps and `exclude`; `secrets`
    are recorded only as changed (`<redacted>`); `m2m` maps relation accessors to their diff names;
    `names` overrides the default diff name of a field; `hidden(obj)` true: the row does not count as existing
    (not yet a change anyone made).
    """
    from audit.models import TARGETS

    if target not in TARGETS:
        raise ValueError(f"{target!r} is not one of the spec's audit targets")
    names = names or {}
    skip = STAMP_FIELDS | set(exclude) | {"license"}
    fields, secret_fields = {}, {}
    for field in model._meta.concrete_fields:
        if field.primary_key or field.name in skip:
            continue
        bucket = secret_fields if field.name in secrets else fields
        bucket[field.attname] = names.get(field.name, api_name(field.attname))
    audited = Audited(model, target, fields, secret_fields, dict(m2m or {}), license_of, hidden)
    for accessor in audited.m2m:
        relation = model._meta.get_field(accessor)
        if relation.many_to_many and relation.concrete:  # forward ManyToManyField
            M2M_INDEX[(relation.remote_field.through, False)] = (model, accessor)
        else:  # reverse side (ManyToManyRel)
            M2M_INDEX[(relation.through, True)] = (model, accessor)
    REGISTRY[model] = audited
    from audit.capture import watch

    watch(audited)
    return audited
