"""Capture: signal receivers collect the changes of audited objects; one entry per changed object is written
just before the unit of work (helpdesk.transactions) commits, inside the same transaction.

Why deferred: one logical change fires several signals (a PATCH saves the agent and then sets two m2m
relations; `license_create` saves the license twice), and they must become exactly one entry. So the first
signal for an object in a transaction snapshots its state before the change (its fields, read from the
database with the row locked; a relation when it first changes), and at the end of the outermost atomic
unit of work the object's state is read again: the difference is the entry (`create` when there was no row before, `delete` when there is none after,
`update` when a field differs, nothing when nothing differs). Reading the "after" state from the database
also makes rolled-back savepoints come out right without tracking them.

The services, the admin's views and the other write paths run in `unit_of_work()`: the first change of a
unit registers `flush` with `before_commit()`, which writes the entries just before the commit; on an
exception the unit drops them with the rollback.

Outside a unit of work (a test's setup, a shell, a write path that forgot its unit) nothing can wait for the
commit, so nothing waits: each statement's entry is written right after it, in the transaction the statement
runs in (its own in autocommit). An entry is never lost that way, but a logical change of several statements
(a save and then its relations) gives several entries: the tests that walk every write path count them, and
catch a path without its unit.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import json
import threading
import uuid

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_delete, pre_save
from django.dispatch import Signal

from accounts.actors import actor_id_in
from audit.models import ACTION_CREATE, ACTION_DELETE, ACTION_UPDATE, AuditEntry
from audit.registry import M2M_INDEX, REDACTED, REGISTRY, Audited
from helpdesk.context import PERSON_TYPES, Actor, current_actor
from helpdesk.transactions import before_commit, current_unit


def jsonable(value):
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    # Through JSON and back, so the stored value hashes the same after the database returns it.
    return json.loads(json.dumps(value, default=str))


@dataclasses.dataclass
class Snapshot:
    """An object's audited state: None for `fields` when the row does not exist."""

    fields: dict | None
    secrets: dict
    m2m: dict
    entity_name: str
    license_id: int | None


def _snapshot(audited: Audited, obj, accessors=None) -> Snapshot:
    """`accessors`: the m2m relations to read (default: all)."""
    if obj is None or (audited.hidden is not None and audited.hidden(obj)):
        return Snapshot(None, {}, {}, "", None)
    fields = {name: jsonable(getattr(obj, attname)) for attname, name in audited.fields.items()}
    secrets = {name: getattr(obj, attname) for attname, name in audited.secrets.items()}
    accessors = audited.m2m if accessors is None else accessors
    m2m = {audited.m2m[accessor]: _related(obj, accessor) for accessor in accessors}
    return Snapshot(fields, secrets, m2m, str(obj)[:255], audited.license_of(obj))


def _related(obj, accessor) -> list[str]:
    return sorted(str(pk) for pk in _related_pks(obj, accessor))


def _related_pks(obj, accessor):
    manager = getattr(obj, accessor)
    cache = getattr(obj, "_prefetched_objects_cache", {})
    name = manager.prefetch_cache_name
    if name in cache:
        return [related.pk for related in cache[name]]
    return manager.values_list("pk", flat=True)


def _load(audited: Audited, pks, *, prefetch: bool = False, lock: bool = False) -> dict:
    queryset = audited.model._base_manager.filter(pk__in=pks)
    if lock:
        queryset = queryset.select_for_update(no_key=True).order_by("pk")
    if prefetch and audited.m2m:
        queryset = queryset.prefetch_related(*audited.m2m)
    return {obj.pk: obj for obj in queryset}


# Sent with the changes of a transaction just after their entries are written, still inside it (webhooks write
# their outbox rows here, so they commit or roll back with the change). `changes`: a list of `Change`.
changes_recorded = Signal()


@dataclasses.dataclass(frozen=True)
class Change:
    model: type
    pk: object
    action: str  # create, update, delete
    obj: object  # the object as it is now (None after a delete)
    before: dict  # its audited fields and relations before (API names; empty for a create)
    license_id: int | None


@dataclasses.dataclass
class Pending:
    audited: Audited
    pk: object
    before: Snapshot
    actor: Actor  # who made the first change (the whole entry is theirs)
    deleting: bool = False  # snapshotted for a deletion (outside a unit: written after its own delete only)


def record_within(instance, *, owner, name: str, using: str | None = None) -> None:
    """Record this transaction's change of `instance` inside the entry of `owner` (under `name`) instead of
    an entry of its own: a side effect of one logical change (the trial a new subscription replaces) is part
    of that change's one entry. Call it before or after saving `instance`, in the same transaction."""
    audited, owner_audited = REGISTRY.get(type(instance)), REGISTRY.get(type(owner))
    if audited is None or owner_audited is None:
        return
    owner_key = (owner_audited.model, owner.pk)
    _state(using or DEFAULT_DB_ALIAS).within[(audited.model, instance.pk)] = (owner_key, name)


@dataclasses.dataclass
class State:
    # {(model, pk): Pending}, in order of first change
    pending: dict = dataclasses.field(default_factory=dict)
    within: dict = dataclasses.field(default_factory=dict)  # record_within's {(model, pk): (owner key, name)}


_outside = threading.local()  # per thread (as connections are): {alias: State} of changes outside any unit


def _state(using: str) -> State:
    """The current unit of work's state (its flush registered with the unit on first use), else the state of
    the statements made outside any unit."""
    unit = current_unit(using)
    if unit is None:
        return _outside.__dict__.setdefault(using, State())
    state = unit.state.get("audit")
    if state is None:
        state = unit.state["audit"] = State()
        before_commit(lambda: flush(using), using)
    return state


def touch(
    instance,
    using: str | None = None,
    *,
    created: bool = False,
    accessor: str | None = None,
    full: bool = False,
) -> None:
    """Note that an audited object is about to change: snapshot its fields on its first change in the
    transaction, and a relation on that relation's first change (`accessor`; `full`: all of them, for a
    delete). A relation never snapshotted did not change (its changes always pass through here first).

    `created`: the row was just inserted (an auto-increment key is unknown before the insert).
    """
    audited = REGISTRY.get(type(instance))
    if audited is None or instance.pk is None:
        return
    connection = connections[using or DEFAULT_DB_ALIAS]
    pending = _state(connection.alias).pending
    key = (audited.model, instance.pk)
    if key in pending:
        before = pending[key].before
        if accessor is not None and before.fields is not None and audited.m2m[accessor] not in before.m2m:
            before.m2m[audited.m2m[accessor]] = sorted(
                str(pk) for pk in getattr(instance, accessor).values_list("pk", flat=True)
            )
        return
    # Locked: the row is about to be written anyway, and a concurrent writer must not slip in between this
    # "before" and our change (the diff would then hide their change).
    lock = connection.in_atomic_block and connection.features.has_select_for_update
    existing = None if created else _load(audited, [instance.pk], lock=lock).get(instance.pk)
    before = _snapshot(audited, existing, None if full else [accessor] if accessor else [])
    pending[key] = Pending(audited, instance.pk, before, current_actor(), deleting=full)


def changed(using: str | None = None, instance=None) -> None:
    """After a statement: outside any unit of work, write its entries now (`instance`: the saved or deleted
    object; None after a relation changed: every pending object but those snapshotted for their deletion)."""
    using = using or DEFAULT_DB_ALIAS
    if current_unit(using) is not None:
        return
    state = _state(using)
    if instance is not None:
        audited = REGISTRY.get(type(instance))
        keys = [(audited.model, instance.pk)] if audited is not None else []
    else:
        keys = [key for key, item in state.pending.items() if not item.deleting]
    if keys:
        with transaction.atomic(using=using):
            flush(using, keys, state)


def _diff(audited: Audited, before: Snapshot, after: Snapshot) -> dict:
    whole = before.fields is None or after.fields is None
    old = {**(before.fields or {}), **before.m2m}
    new = {**(after.fields or {}), **{k: v for k, v in after.m2m.items() if whole or k in before.m2m}}
    changes = {}
    for name in {**old, **new}:
        if before.fields is None or after.fields is None or old.get(name) != new.get(name):
            changes[name] = {"before": old.get(name), "after": new.get(name)}
    if before.fields is not None and after.fields is not None:
        for name in audited.secrets.values():
            if before.secrets.get(name) != after.secrets.get(name):
                changes[name] = {"before": REDACTED, "after": REDACTED}
    if before.fields is None or after.fields is None:
        # A whole object appears or disappears: one side is null, empty values are left out.
        changes = {k: v for k, v in changes.items() if v["before"] not in (None, "", [], {})
                   or v["after"] not in (None, "", [], {})}  # fmt: skip
    return changes


def _author_id(actor: Actor, license_id, memo: dict):
    key = (actor, license_id)
    if key not in memo:
        memo[key] = actor_id_in(license_id, actor)
    return memo[key]


def _entries(
    pending: list[Pending], within: dict | None = None, recorded: list[Change] | None = None
) -> list[AuditEntry]:
    """One entry per changed object; a change recorded within another object's entry (`record_within`) goes
    into that entry's changes as {name: {"before": {"ID", fields...}, "after": {...}}}, or, when that object
    has no entry, into its own. Each change is also appended to `recorded` (for `changes_recorded`)."""
    within = within or {}
    authors: dict = {}  # (actor, license) -> author ID: one lookup per author and license, not per entry
    loaded: dict = {}
    for item in pending:
        loaded.setdefault(item.audited, set()).add(item.pk)
    current = {audited: _load(audited, pks, prefetch=True) for audited, pks in loaded.items()}
    entries, by_key, nested = [], {}, []
    for item in pending:
        audited = item.audited
        after = _snapshot(audited, current[audited].get(item.pk))
        before = item.before
        if before.fields is None and after.fields is None:
            continue  # created and removed within one transaction, or its creation rolled back
        if before.fields is None:
            action, named = ACTION_CREATE, after
        elif after.fields is None:
            action, named = ACTION_DELETE, before
        else:
            action, named = ACTION_UPDATE, after
        changes = _diff(audited, before, after)
        if action == ACTION_UPDATE and not changes:
            continue
        if recorded is not None:
            obj = current[audited].get(item.pk)
            state = {**(before.fields or {}), **before.m2m}
            recorded.append(Change(audited.model, item.pk, action, obj, state, named.license_id))
        key = (audited.model, item.pk)
        if key in within:
            nested.append((within[key], len(entries), item.pk, changes))
        actor = item.actor
        by_key[key] = len(entries)
        entries.append(
            AuditEntry(
                license_id=named.license_id,
                action=action,
                target=audited.target,
                object_id=str(item.pk),
                entity_name=named.entity_name,
                author_type=actor.type,
                author_id=_author_id(actor, named.license_id, authors),
                author_account_id=actor.id if actor.type in PERSON_TYPES else None,
                author_email=actor.email or "",
                author_ip=actor.ip or "",
                author_user_agent=(actor.user_agent or "")[:512],
                author_app_name=actor.app_name[:255] or None,
                changes=jsonable(changes),
            )
        )
    folded = set()
    for (owner_key, name), own_index, pk, changes in nested:
        index = by_key.get(owner_key)
        if index is None:
            continue  # the owner made no entry: the change keeps its own
        part = {
            side: {"ID": str(pk)} | {field: c[side] for field, c in changes.items()}
            for side in ("before", "after")
        }
        entries[index].changes[name] = jsonable(part)
        folded.add(own_index)
    return [entry for index, entry in enumerate(entries) if index not in folded]


def flush(using: str, keys=None, state: State | None = None) -> list[AuditEntry]:
    """Write the entries of the pending changes, in the current transaction: by default all of the current
    unit of work's (its before-commit callback), else those of `keys` in `state` (outside any unit)."""
    from audit.chain import append

    if state is None:
        unit = current_unit(using)
        state = unit.state.pop("audit", None) if unit is not None else None
        if state is None:
            return []
    keys = list(state.pending) if keys is None else [key for key in keys if key in state.pending]
    pending = [state.pending.pop(key) for key in keys]
    within = {key: state.within.pop(key) for key in keys if key in state.within}
    if not pending:
        return []
    recorded: list[Change] = []
    written = append(_entries(pending, within, recorded))
    if recorded:
        changes_recorded.send(sender=Change, changes=recorded)
    return written


# --- receivers (connected per audited model, so other models keep Django's fast deletes) ---------------------


def _forget_failed(instance, using) -> None:
    """Outside a unit of work no change outlives its statement: one still pending is a failed statement's,
    whose "before" may no longer be true."""
    using = using or DEFAULT_DB_ALIAS
    audited = REGISTRY.get(type(instance))
    if audited is not None and current_unit(using) is None:
        _state(using).pending.pop((audited.model, instance.pk), None)


def _pre_save(sender, instance, raw=False, using=None, **kwargs):
    if not raw:
        _forget_failed(instance, using)
        touch(instance, using)


def _post_save(sender, instance, created=False, raw=False, using=None, **kwargs):
    if not raw:
        touch(instance, using, created=created)
        changed(using, instance)


def _pre_delete(sender, instance, using=None, **kwargs):
    _forget_failed(instance, using)
    touch(instance, using, full=True)


def _post_delete(sender, instance, using=None, **kwargs):
    changed(using, instance)


def _m2m_changed(sender, instance, action, reverse, model, pk_set, using=None, **kwargs):
    """A relation changed: it belongs to the diff of the side it was changed from when that side is audited
    with it (`agent.teams.set()` -> the agent), else to each object on the other side (`team.agents.add()`
    -> each agent whose teamIDs changed). Never both: one change, one entry."""
    if not action.startswith("pre_"):
        changed(using)
        return
    owner = M2M_INDEX.get((sender, reverse))
    if owner is not None and owner[0] is type(instance):
        touch(instance, using, accessor=owner[1])
        return
    other = M2M_INDEX.get((sender, not reverse))
    if other is None or other[0] is not model:
        return
    if pk_set is None:  # clear(): everything related now
        related = _related_via(sender, instance, model)
    else:
        related = model._base_manager.filter(pk__in=pk_set)
    for obj in related.order_by("pk"):  # one lock order
        touch(obj, using, accessor=other[1])


def _related_via(through, instance, model):
    fields = [field for field in through._meta.concrete_fields if field.is_relation]
    source = next(field for field in fields if field.related_model is type(instance))
    target = next(field for field in fields if field.related_model is model)
    pks = through._base_manager.filter(**{source.attname: instance.pk}).values_list(target.attname, flat=True)
    return model._base_manager.filter(pk__in=list(pks))


def watch(audited: Audited) -> None:
    """Connect the receivers for one registered model (and the through models of its m2m relations)."""
    model = audited.model
    label = model._meta.label_lower
    for signal, handler in ((pre_save, _pre_save), (post_save, _post_save), (pre_delete, _pre_delete),
                            (post_delete, _post_delete)):  # fmt: skip
        signal.connect(handler, sender=model, weak=False, dispatch_uid=f"audit{handler.__name__}_{label}")
    for through, _reverse in list(M2M_INDEX):
        m2m_changed.connect(
            _m2m_changed, sender=through, weak=False, dispatch_uid=f"audit_m2m_{through._meta.label_lower}"
        )
