"""The plain frozen record the events and the launch's own events are made of (:class:`Record`)."""

from __future__ import annotations

from typing import Any, ClassVar, Self


class Record:
    """A plain frozen record: equal when of the same class with equal fields, hashable, never changed.

    Not a dataclass: creating the 20 record classes of :mod:`agentlaunch.events` as frozen slotted dataclasses took
    about a millisecond each at every launch's import (the generated methods are compiled then); a plain class
    costs a few microseconds. The fields are the ``__slots__`` of the class and of its bases, in order,
    and each class's ``__init__`` takes them in that order (:meth:`replace` and pickling rely on it).
    """

    __slots__ = ()
    field_names: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls) -> None:
        cls.field_names = tuple(name for klass in reversed(cls.__mro__) for name in vars(klass).get("__slots__", ()))

    def values(self) -> tuple[Any, ...]:
        """The fields' values, in order."""
        return tuple(getattr(self, name) for name in self.field_names)

    def fields(self) -> dict[str, Any]:
        """The fields by name, in order (nested records as they are)."""
        return {name: getattr(self, name) for name in self.field_names}

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes``."""
        unknown = set(changes) - set(self.field_names)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        return type(self)(*(changes.get(name, getattr(self, name)) for name in self.field_names))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.values() == other.values()

    def __hash__(self) -> int:
        return hash(self.values())

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{name}={getattr(self, name)!r}' for name in self.field_names)})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return type(self), self.values()
