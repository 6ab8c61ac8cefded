"""A dataclass whose methods are not compiled at import: ``@datarecord`` instead of ``@dataclass`` on the launch path.

``dataclasses.dataclass`` writes the source of ``__init__``, ``__repr__``,
``__eq__``, ``__hash__`` and a frozen class's ``__setattr__``/``__delattr__``
and compiles each with ``exec`` when the class is made: about half a
millisecond a class, 35 ms for the 41 classes a headless launch imported
(``bench/bench_imports.py``). ``datarecord`` lets ``dataclass`` make the class
and its fields only (``init``, ``repr`` and ``eq`` off: no ``exec``, ~40 µs) and
gives it generic methods that read the fields at run time. The class is still
a dataclass to the standard library (``dataclasses.fields``, ``replace``,
``asdict``, ``is_dataclass``) and to mypy (``dataclass_transform``); an
instance is made a few microseconds slower, which nothing made by the
thousand pays for on this path.

Behaves as ``dataclass(frozen=..., slots=...)`` with ``eq=True`` does: keyword
or positional arguments in field order, ``field(default_factory=...)``,
``__post_init__``, equality of instances of the very same class on the fields
that compare, a frozen class hashable on them (a mutable one unhashable), a
``FrozenInstanceError`` for assignment to a frozen one. Not supported (none of
its classes use them): ``InitVar``, ``kw_only``, ``order``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar, cast, dataclass_transform, overload

T = TypeVar("T", bound=type)
MISSING: Any = dataclasses.MISSING


@overload
def datarecord(cls: T, /) -> T: ...


@overload
def datarecord(*, frozen: bool = False, slots: bool = False) -> Callable[[T], T]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def datarecord(cls: T | None = None, /, *, frozen: bool = False, slots: bool = False) -> T | Callable[[T], T]:
    """``@datarecord`` / ``@datarecord(frozen=True, slots=True)``: see the module."""

    def wrap(klass: T) -> T:
        undocumented = klass.__doc__ is None
        if undocumented:  # else dataclass writes one from inspect.signature: tokenize's regexes compiled, ~5 ms
            klass.__doc__ = klass.__name__
        made = _finish(dataclasses.dataclass(init=False, repr=False, eq=False, slots=slots)(klass), frozen)
        if undocumented:
            made.__doc__ = f"{made.__name__}({', '.join(f.name for f in dataclasses.fields(made))})"
        return cast(T, made)

    return wrap if cls is None else wrap(cls)


def _finish(cls: Any, frozen: bool) -> Any:
    fields = dataclasses.fields(cls)
    own = vars(cls)
    inits: tuple[tuple[str, Any, Any], ...] = tuple((f.name, f.default, f.default_factory) for f in fields if f.init)
    names = tuple(name for name, _, _ in inits)
    later: tuple[tuple[str, Any, Any], ...] = tuple((f.name, f.default, f.default_factory) for f in fields if not f.init)
    shown = tuple(f.name for f in fields if f.repr)
    compared = tuple(f.name for f in fields if f.compare)
    hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
    set_field = object.__setattr__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes {len(names)} positional arguments but {len(args)} were given")
        for key in kwargs:
            if key not in names:
                raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {key!r}")
            if names.index(key) < len(args):
                raise TypeError(f"{cls.__name__}() got multiple values for argument {key!r}")
        for i, (name, default, factory) in enumerate(inits):
            if i < len(args):
                value = args[i]
            elif name in kwargs:
                value = kwargs[name]
            elif default is not MISSING:
                value = default
            elif factory is not MISSING:
                value = factory()
            else:
                raise TypeError(f"{cls.__name__}() missing required argument: {name!r}")
            set_field(self, name, value)
        for name, default, factory in later:
            if default is not MISSING or factory is not MISSING:
                set_field(self, name, default if default is not MISSING else factory())
        post = getattr(self, "__post_init__", None)
        if post is not None:
            post()

    def __repr__(self: Any) -> str:
        return f"{type(self).__qualname__}({', '.join(f'{name}={getattr(self, name)!r}' for name in shown)})"

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in compared)

    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, name) for name in hashed))

    def __setattr__(self: Any, name: str, value: object) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self: Any, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self: Any) -> tuple[Any, tuple[Any, ...]]:  # copy and pickle: through __init__, never __setattr__
        return type(self), tuple(getattr(self, name) for name in names)

    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    methods: dict[str, Any] = {"__init__": __init__, "__repr__": __repr__, "__eq__": __eq__}
    if not explicit_hash:
        methods["__hash__"] = __hash__ if frozen else None
    if frozen:
        methods.update(__setattr__=__setattr__, __delattr__=__delattr__, __reduce__=__reduce__)
    for name, method in methods.items():
        if name not in own or (name == "__hash__" and not explicit_hash):
            if method is not None:
                method.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, method)
    return cls
