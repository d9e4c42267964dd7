"""Fields that the apps built on accounts add to its API documents (accounts never imports those apps).

A serializer names every field of its document in `Meta.fields` (the API's spelling and order are accounts'),
and the app that owns a field's data supplies it at ready(): `LicenseSerializer.extend("subscription",
make_field, load=...)` (billing). `load(objects)` fetches the data of a whole page in one query before a list
is written. A field whose app is not installed is left out of the document.
"""

from __future__ import annotations

from collections.abc import Callable

from rest_framework import serializers


class ExtensibleSerializer:
    # Mixed into a Serializer whose `Meta.fields` names fields registered by other apps (`extend`). No docstring:
    # the schema would take it as the description of every such serializer.

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._extensions: dict[str, Callable[[], serializers.Field]] = {}
        cls._loaders: list[Callable[[list], None]] = []

    @classmethod
    def extend(cls, name: str, make_field: Callable[[], serializers.Field], *, load=None) -> None:
        if name not in cls.Meta.fields:
            raise ValueError(f"{cls.__name__} has no field {name!r} to supply")
        cls._extensions[name] = make_field
        if load is not None and load not in cls._loaders:
            cls._loaders.append(load)

    @classmethod
    def load(cls, objects: list) -> None:
        for load in cls._loaders:
            load(objects)

    def get_fields(self):
        fields = super().get_fields()
        fields.update({name: make() for name, make in self._extensions.items()})
        return {name: fields[name] for name in self.Meta.fields if name in fields}
