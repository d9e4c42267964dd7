"""Query parameters are an allowlist: an unknown one is a 400 naming it, as an unknown body field is.

A filter written in another common form (`teamIDs=<id>` for `teamIDs[]`, `timeRange[from]` for `timeRange.from`)
used to be ignored, so the search returned everything; a client that then acts on "what the search returned" acts
on everything. Where a bracket form is common enough it is a synonym (`StrictFilterSet.bracket_synonyms`:
`customFields[region]` = `customFields.region`); every other unknown name gets a hint naming the right form.

The check is a set difference of the query's keys against names computed once per class; the query string is
copied only when a synonym has to be renamed.
"""

from __future__ import annotations

import django_filters
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework.exceptions import ValidationError

UNKNOWN = "Unknown parameter."


def refusing_empty_values(form_class):
    """`form_class` whose parameters, when present but empty (`?state=`), are a 400 naming them, as everywhere
    else in the API, not "no filter". For a FilterSet's get_form_class."""
    return type(form_class.__name__, (form_class,), {"clean": _refuse_empty_values})


def _refuse_empty_values(form):
    cleaned = super(type(form), form).clean()
    for name in form.fields:
        if name in form.data and not str(form.data.get(name, "")).strip():
            form.add_error(name, "This parameter may not be empty.")
    return cleaned


class StrictFilterSet(django_filters.FilterSet):
    """A FilterSet whose parameters, and nothing else, a request may send (besides the paginator's).

    `prefix_params`: roots of open-ended families, e.g. `("customFields",)` for `customFields.<apiKey>`; the
    root alone is not a parameter. `bracket_synonyms`: roots whose `root[sub]` means `root.sub`.
    """

    prefix_params: tuple[str, ...] = ()
    bracket_synonyms: frozenset[str] = frozenset()

    @classmethod
    def known_params(cls) -> frozenset[str]:
        known = cls.__dict__.get("_known_params")
        if known is None:
            known = frozenset(cls.base_filters) - set(cls.prefix_params)
            cls._known_params = known
        return known

    @classmethod
    def check_params(cls, data, extra=frozenset()):
        """`data` itself when every key is known; a renamed copy when a synonym was used; else a 400."""
        unknown = data.keys() - cls.known_params()
        if not unknown:
            return data
        unknown -= extra
        errors, renamed = {}, {}
        for key in sorted(unknown):
            root, dot, _ = key.partition(".")
            if dot and root in cls.prefix_params and key != f"{root}.":
                continue
            synonym = cls._synonym(key)
            if synonym is not None:
                renamed[key] = synonym
            else:
                errors[key] = [_hint(key, cls.known_params() | set(extra), cls.prefix_params)]
        if errors:
            raise ValidationError(errors)
        if not renamed:
            return data
        data = data.copy()
        for key, synonym in renamed.items():
            data.setlist(synonym, data.getlist(synonym) + data.pop(key))
        return data

    @classmethod
    def _synonym(cls, key: str) -> str | None:
        root, bracket, rest = key.partition("[")
        if not bracket or root not in cls.bracket_synonyms or not rest.endswith("]") or len(rest) < 2:
            return None
        dotted = f"{root}.{rest[:-1]}"
        if dotted in cls.known_params() or (root in cls.prefix_params and "[" not in rest[:-1]):
            return dotted
        return None


def _hint(key: str, known, prefixes) -> str:
    """ "Unknown parameter." and, where the name looks like a known one in another form, which form to use."""
    candidates = []
    root, bracket, rest = key.partition("[")
    if bracket and rest.endswith("]"):
        inner = rest[:-1]
        candidates += [f"{root}[]", f"{root}.{inner}"] if inner else [root]
    elif key.endswith("[]"):
        candidates.append(key[:-2])
    else:
        candidates.append(f"{key}[]")
    lowered = {name.lower(): name for name in known}
    candidates.append(lowered.get(key.lower(), ""))
    for candidate in candidates:
        if candidate in known and candidate != key:
            if candidate.endswith("[]"):
                return f"{UNKNOWN} Use '{candidate}' (repeat it for several values)."
            return f"{UNKNOWN} Use '{candidate}'."
    if root in prefixes or key in prefixes:
        return f"{UNKNOWN} Use '{root}.<apiKey>=<value>' (or '{root}[<apiKey>]=<value>')."
    return UNKNOWN


class StrictFilterBackend(DjangoFilterBackend):
    """DjangoFilterBackend refusing unknown query parameters (StrictFilterSet), the paginator's allowed."""

    def get_filterset_kwargs(self, request, queryset, view):
        kwargs = super().get_filterset_kwargs(request, queryset, view)
        filterset_class = self.get_filterset_class(view, queryset)
        if isinstance(filterset_class, type) and issubclass(filterset_class, StrictFilterSet):
            kwargs["data"] = filterset_class.check_params(kwargs["data"], _paginator_params(view))
        return kwargs

    def filter_queryset(self, request, queryset, view):
        # A list without a FilterSet takes no filters: any parameter but the paginator's is unknown.
        if getattr(view, "action", None) == "list" and self.get_filterset_class(view, queryset) is None:
            unknown = request.query_params.keys() - _paginator_params(view)
            if unknown:
                raise ValidationError(
                    {key: [f"{UNKNOWN} This list takes no filters."] for key in sorted(unknown)}
                )
        return super().filter_queryset(request, queryset, view)


def _paginator_params(view) -> frozenset[str]:
    paginator = getattr(view, "paginator", None)
    return getattr(paginator, "query_param_names", frozenset())
