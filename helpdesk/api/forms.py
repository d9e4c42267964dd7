"""Validation-only forms whose instances share their field objects.

A Django form deep-copies every field for each instance (so that rendering one form cannot change another).
The API's parameter forms are never rendered and their fields keep no state while cleaning, so the copy is pure
cost on every request (~0.3 ms for the forty parameters of ticket search). `shared_fields(form_class)` makes the
class's instances share its fields instead.
"""

from __future__ import annotations


class _SharedFields(dict):
    """`base_fields` whose deep copy (made by BaseForm.__init__) is a shallow one."""

    def __deepcopy__(self, memo):
        return dict(self)


def shared_fields(form_class):
    """`form_class`, changed so that its instances share the field objects of `base_fields`."""
    form_class.base_fields = _SharedFields(form_class.base_fields)
    return form_class
