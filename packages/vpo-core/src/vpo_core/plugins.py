"""Named records that other packages add through an entry-point group: lazy and loud.

The method registry (`vpo_core.methods.METHODS`, group ``vpo.methods``) and the weight-sampler registry
(`vpo_core.weights.WEIGHT_SAMPLERS`, group ``vpo.weight_samplers``) are `Registry` mappings: a name
resolves to a record registered in this process (vpo-core's own, or one a module registered when it was
imported) or, failing that, to the installed entry point of that name, which is loaded then, once.
Listing the names (iteration, ``in``, ``len``) reads package metadata only and imports nothing, as
`vpo_core.list_envs` does for envs; iteration gives the built-in names in their order of registration,
then the others sorted.

An entry point names either the record itself (``name = "package.module:RECORD"``; the record's
``name`` must equal the entry point's) or a module that registers it when imported (``name =
"package.module"``), e.g. with `vpo_core.methods.register_method`, which is also where a method's
objective and normaliser get registered. A plugin that fails to import raises, an id claimed by two
distributions or by a record built into vpo-core is refused, and a loaded entry point that registers
nothing under its name is an error naming it: none is skipped.
"""

from __future__ import annotations

import types
from collections.abc import Iterator, MutableMapping
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

__all__ = ["Registry"]

T = TypeVar("T")


def _dist(ep: EntryPoint) -> str:
    return str(getattr(ep.dist, "name", None) or "an unknown distribution")


class Registry(MutableMapping[str, T], Generic[T]):
    """Records of one kind by name: those registered in this process, then the group's entry points.

    Args:
        kind: What a record is, for messages (``"method"``).
        group: The entry-point group (``"vpo.methods"``).
        record: The records' type; each has a ``name`` attribute.
    """

    def __init__(self, kind: str, group: str, record: type[T]) -> None:
        self.kind = kind
        self.group = group
        self.record = record
        self._entries: dict[str, T] = {}
        self._builtin: tuple[str, ...] = ()

    # ---------------------------------------------------------------------------- registration
    def register(self, name: str, value: T) -> T:
        """Add `value` under `name`.

        Raises:
            TypeError: If `value` is not a record of this registry's type.
            ValueError: If `name` is already registered in this process.
        """
        if not isinstance(value, self.record):
            raise TypeError(f"a {self.kind} must be a {self.record.__name__}, got {value!r}.")
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered.")
        self._entries[name] = value
        return value

    def seal_builtins(self) -> None:
        """Mark the records registered so far as built in: an entry point may not claim their names."""
        self._builtin = tuple(self._entries)

    def registered(self) -> list[str]:
        """Names registered in this process so far (built in or imported), sorted; reads no metadata."""
        return sorted(self._entries)

    # ----------------------------------------------------------------------------- entry points
    def entry_points(self) -> dict[str, EntryPoint]:
        """The group's installed entry points by name (metadata only: imports nothing).

        Raises:
            RuntimeError: If two distributions register one name differently, or an entry point claims
                the name of a record built into vpo-core.
        """
        found: dict[str, EntryPoint] = {}
        for ep in entry_points(group=self.group):
            if ep.name in self._builtin:
                raise RuntimeError(
                    f"{self.kind} {ep.name!r} is built into vpo-core, but {_dist(ep)} registers it again in "
                    f"{self.group!r} ({ep.value}); give that {self.kind} another name."
                )
            if ep.name in found and found[ep.name].value != ep.value:
                raise RuntimeError(
                    f"{self.kind} {ep.name!r} is registered twice in {self.group!r}: by {_dist(found[ep.name])} "
                    f"({found[ep.name].value}) and by {_dist(ep)} ({ep.value}); uninstall one of them."
                )
            found[ep.name] = ep
        return found

    def _load(self, ep: EntryPoint) -> T:
        loaded = ep.load()  # an import error propagates: a broken plugin is never skipped
        where = f"the entry point {ep.name} = {ep.value} of {_dist(ep)} (group {self.group!r})"
        if isinstance(loaded, self.record):
            if getattr(loaded, "name", None) != ep.name:
                raise TypeError(
                    f"{where} names a {self.kind} whose name is {getattr(loaded, 'name', None)!r}; "
                    "make the record's name equal the entry-point name."
                )
            current = self._entries.setdefault(ep.name, loaded)
            if current is not loaded and current != loaded:
                raise ValueError(f"{where} names a {self.kind} other than the {ep.name!r} already registered.")
        elif not isinstance(loaded, types.ModuleType):
            raise TypeError(
                f"{where} names {loaded!r}: it must name a {self.record.__name__} or a module that registers one."
            )
        if ep.name not in self._entries:
            raise TypeError(f"{where} was imported but registered no {self.kind} {ep.name!r}.")
        return self._entries[ep.name]

    # -------------------------------------------------------------------------------- mapping
    def __getitem__(self, name: str) -> T:
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            pass
        ep = self.entry_points().get(name) if isinstance(name, str) else None
        if ep is None:
            raise KeyError(name)
        return self._load(ep)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        return name in self._entries or name in self.entry_points()

    def __iter__(self) -> Iterator[str]:
        """The built-in names in their order of registration, then every other name, sorted."""
        others = (set(self._entries) | set(self.entry_points())).difference(self._builtin)
        return iter([*(name for name in self._builtin if name in self._entries), *sorted(others)])

    def __len__(self) -> int:
        return len(set(self._entries) | set(self.entry_points()))

    def __setitem__(self, name: str, value: T) -> None:
        """Set a record directly, replacing any (tests patch the registry this way); `register` checks."""
        if not isinstance(value, self.record):
            raise TypeError(f"a {self.kind} must be a {self.record.__name__}, got {value!r}.")
        self._entries[name] = value

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.group!r}: {list(self)})"
