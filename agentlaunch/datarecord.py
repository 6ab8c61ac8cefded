"""Records made without the ``dataclasses`` module: ``@datarecord`` instead of ``@dataclass`` on the launch path.

``dataclasses.dataclass`` writes the source of ``__init__``, ``__repr__``,
``__eq__``, ``__hash__`` and a frozen class's ``__setattr__``/``__delattr__``
and compiles each with ``exec`` when the class is made: about half a
millisecond a class, 35 ms for the 41 classes a headless launch imported. And
importing ``dataclasses`` imports ``inspect`` (with ``ast``, ``dis`` and
``tokenize``): 11 ms of CPU in every process that does, measured. This module
makes a record from the class's annotations with the standard library's
always-loaded parts only, and gives it generic methods that read the fields at
run time (an instance is made a few microseconds slower, which nothing made by
the thousand pays for on this path).

Behaves as ``dataclass(frozen=..., slots=...)`` with ``eq=True`` does: keyword
or positional arguments in field order, ``field(default=..., default_factory=...,
init=..., repr=..., compare=..., hash=...)``, ``__post_init__``, inherited
fields first, ``ClassVar`` annotations skipped, ``__match_args__``, equality of
instances of the very same class on the fields that compare, a frozen class
hashable on them (a mutable one unhashable), a :class:`FrozenInstanceError`
(an ``AttributeError``) on assignment to a frozen one, copy and pickle.
``fields`` and ``replace`` here do what the standard library's do, for a record
or a dataclass. A record is not a dataclass to ``dataclasses`` itself. Not
supported (none of its classes use them): ``InitVar``, ``kw_only``, ``order``.

Kept under issue 40's rule (a stand-in for a library stays where it saves at least 10 ms on a path a person
waits on, is built on public APIs only and is tested against the original: ``tests/test_datarecord.py``).
Measured 2026-12-06 with ``bench/bench_imports.py --before`` (what a headless launch imports, 21 alternating
rounds, load average 32-34 on 2 cores): with these 41 classes as ``@dataclass`` the imports' process CPU was
89.8 ms against 57.6 ms (agentlaunch's own import time 33.3 against 15.2 ms; ``dataclasses`` and ``inspect``
loaded); with ``@datarecord`` 70.7 ms against 64.8 ms in the same kind of run: about 26 ms of CPU a launch.

The events, the launch's own events and :class:`~agentlaunch.token_usage.Usage` are records too (they had a stand-in
of their own, ``frozen_record.Record`` with hand-written ``__init__``s, folded in here on 2026-12-07): measured with
``bench/bench_imports.py --before`` (load 11-14 on 2 cores), importing ``agentlaunch.events`` and ``agentlaunch.sinks``
took 3.2 ms against 2.2 ms (31 rounds; process CPU 56.7 against 56.2 ms), what a headless launch imports 76.3 against
73.2 ms (21 rounds; process CPU 159.6 against 164.0 ms: within the noise), and the Claude parser made 2,005 events of
a 2,009-line turn in 15.2-16.3 ms of CPU against 13.5-14.7 ms: below a microsecond an event, 1 ms a launch, far under
the 10 ms a second stand-in would have to save (``tests/test_datarecord.py`` holds each of them to a dataclass).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar, cast, dataclass_transform, overload

T = TypeVar("T", bound=type)
V = TypeVar("V")


class _Missing:
    """No value given (a field with no default)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
FIELDS = "__datarecord_fields__"
"""The class attribute that holds a record's fields, inherited ones first."""


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen record (as ``dataclasses.FrozenInstanceError``)."""


class Field:
    """One field of a record: its name, its default or default factory, and whether init, repr, eq and hash use it."""

    __slots__ = ("name", "default", "default_factory", "init", "repr", "compare", "hash")

    def __init__(
        self,
        default: Any = MISSING,
        default_factory: Any = MISSING,
        init: bool = True,
        repr: bool = True,
        compare: bool = True,
        hash: bool | None = None,
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.default, self.default_factory = default, default_factory
        self.init, self.repr, self.compare, self.hash = init, repr, compare, hash

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r}, default_factory={self.default_factory!r})"


@overload
def field(*, default: V, init: bool = ..., repr: bool = ..., compare: bool = ..., hash: bool | None = ...) -> V: ...


@overload
def field(
    *, default_factory: Callable[[], V], init: bool = ..., repr: bool = ..., compare: bool = ..., hash: bool | None = ...
) -> V: ...


@overload
def field(*, init: bool = ..., repr: bool = ..., compare: bool = ..., hash: bool | None = ...) -> Any: ...


def field(
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    init: bool = True,
    repr: bool = True,
    compare: bool = True,
    hash: bool | None = None,
) -> Any:
    """A field with options, as ``dataclasses.field``."""
    return Field(default, default_factory, init, repr, compare, hash)


def fields(record: Any) -> tuple[Field, ...]:
    """The fields of a record (or of its class), inherited ones first; a dataclass's through ``dataclasses``."""
    found = getattr(record, FIELDS, None)
    if found is not None:
        return cast(tuple[Field, ...], found)
    if hasattr(record, "__dataclass_fields__"):
        import dataclasses

        return cast(tuple[Field, ...], dataclasses.fields(record))
    raise TypeError(f"{record!r} is neither a record nor a dataclass")


def is_record(value: Any) -> bool:
    """Whether ``value`` is a record or a dataclass instance (not a class)."""
    return not isinstance(value, type) and (hasattr(value, FIELDS) or hasattr(value, "__dataclass_fields__"))


def replace(record: V, /, **changes: Any) -> V:
    """A copy of ``record`` with ``changes``, made through its ``__init__`` (as ``dataclasses.replace``)."""
    if not hasattr(record, FIELDS):
        import dataclasses

        return dataclasses.replace(record, **changes)  # type: ignore[type-var]
    for f in fields(record):
        if not f.init and f.name in changes:
            raise ValueError(f"field {f.name} is declared with init=False, it cannot be specified with replace()")
        if f.init and f.name not in changes:
            changes[f.name] = getattr(record, f.name)
    return type(record)(**changes)


@overload
def datarecord(cls: T, /) -> T: ...


@overload
def datarecord(*, frozen: bool = False, slots: bool = False) -> Callable[[T], T]: ...


@dataclass_transform(field_specifiers=(field, Field))
def datarecord(cls: T | None = None, /, *, frozen: bool = False, slots: bool = False) -> T | Callable[[T], T]:
    """``@datarecord`` / ``@datarecord(frozen=True, slots=True)``: see the module."""

    def wrap(klass: T) -> T:
        return cast(T, _finish(klass, frozen, slots))

    return wrap if cls is None else wrap(cls)


def _is_class_var(annotation: Any) -> bool:
    if isinstance(annotation, str):  # under `from __future__ import annotations`, as dataclasses reads it
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    return annotation is ClassVar or getattr(annotation, "__origin__", None) is ClassVar


def _own_fields(cls: Any) -> list[Field]:
    """The fields the class itself declares, in order (``ClassVar`` annotations are not fields)."""
    own: list[Field] = []
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if _is_class_var(annotation):
            continue
        value = cls.__dict__.get(name, MISSING)
        f = value if isinstance(value, Field) else Field(default=value)
        f.name = name
        if isinstance(f.default, list | dict | set):
            raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory")
        own.append(f)
    return own


def _all_fields(cls: Any, own: list[Field]) -> tuple[Field, ...]:
    found: dict[str, Field] = {}
    for base in cls.__mro__[-1:0:-1]:
        for f in base.__dict__.get(FIELDS, ()):
            found[f.name] = f
    found.update((f.name, f) for f in own)
    return tuple(found.values())


def _with_slots(cls: Any, own: list[Field]) -> Any:
    """The class made again with ``__slots__`` for its own fields (their defaults live in the fields)."""
    names = {f.name for f in own}
    namespace = {k: v for k, v in cls.__dict__.items() if k not in names and k not in ("__dict__", "__weakref__")}
    namespace["__slots__"] = tuple(f.name for f in own)
    made = type(cls)(cls.__name__, cls.__bases__, namespace)
    made.__qualname__ = cls.__qualname__
    return made


def _finish(cls: Any, frozen: bool, slots: bool) -> Any:
    own = _own_fields(cls)
    if slots:
        cls = _with_slots(cls, own)
    else:
        for f in own:  # a `field(...)` class attribute becomes its default, or goes, as in a dataclass
            if isinstance(cls.__dict__.get(f.name), Field):
                if f.default is MISSING:
                    delattr(cls, f.name)
                else:
                    setattr(cls, f.name, f.default)
    every = _all_fields(cls, own)
    setattr(cls, FIELDS, every)
    inits: tuple[tuple[str, Any, Any], ...] = tuple((f.name, f.default, f.default_factory) for f in every if f.init)
    names = tuple(name for name, _, _ in inits)
    seen_default = False
    for name, default, factory in inits:
        if default is not MISSING or factory is not MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {name!r} follows default argument")
    later: tuple[tuple[str, Any, Any], ...] = tuple((f.name, f.default, f.default_factory) for f in every if not f.init)
    shown = tuple(f.name for f in every if f.repr)
    compared = tuple(f.name for f in every if f.compare)
    hashed = tuple(f.name for f in every if (f.compare if f.hash is None else f.hash))
    own_dict = vars(cls)
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
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self: Any, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self: Any) -> tuple[Any, tuple[Any, ...]]:  # copy and pickle: through __init__, never __setattr__
        return type(self), tuple(getattr(self, name) for name in names)

    explicit_hash = "__hash__" in own_dict and not (own_dict["__hash__"] is None and "__eq__" in own_dict)
    methods: dict[str, Any] = {"__init__": __init__, "__repr__": __repr__, "__eq__": __eq__}
    if not explicit_hash:
        methods["__hash__"] = __hash__ if frozen else None
    if frozen:
        methods.update(__setattr__=__setattr__, __delattr__=__delattr__, __reduce__=__reduce__)
    for name, method in methods.items():
        if name not in own_dict or (name == "__hash__" and not explicit_hash):
            if method is not None:
                method.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, method)
    if "__match_args__" not in own_dict:
        setattr(cls, "__match_args__", names)  # noqa: B010  # mypy: not assignable on a type
    if cls.__doc__ is None:
        cls.__doc__ = f"{cls.__name__}({', '.join(names)})"
    return cls
