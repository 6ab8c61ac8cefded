"""``@datarecord`` behaves as ``@dataclass`` does for what the launch path's classes use (agentlaunch.datarecord)."""

from __future__ import annotations

import ast
import copy
import dataclasses
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from agentlaunch import datarecord as records
from agentlaunch.datarecord import FrozenInstanceError, datarecord


@datarecord(frozen=True)
class Point:
    """A frozen record with a default, a factory, a ClassVar and a field left out of repr and equality."""

    x: int
    y: int = 0
    tags: list[str] = records.field(default_factory=list)
    note: str = records.field(default="", repr=False, compare=False)
    unit: ClassVar[str] = "px"


@dataclass(frozen=True)
class DataPoint:
    """The same class as a dataclass: what Point is compared with."""

    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    note: str = field(default="", repr=False, compare=False)
    unit: ClassVar[str] = "px"


@datarecord(frozen=True, slots=True)
class Point3(Point):
    """A slotted subclass: the base's fields first."""

    z: int = 0


@datarecord
class Box:
    """A mutable record with a __post_init__."""

    items: list[int]
    total: int = records.field(default=0, init=False)

    def __post_init__(self) -> None:
        self.total = sum(self.items)


def test_construction_repr_and_equality_match_dataclass() -> None:
    cases: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((1,), {}),
        ((1, 2), {}),
        ((), {"x": 1, "tags": ["a"]}),
        ((1,), {"note": "n", "y": 3}),
    ]
    for args, kwargs in cases:
        ours, theirs = Point(*args, **kwargs), DataPoint(*args, **kwargs)
        assert repr(ours).replace("Point", "DataPoint", 1) == repr(theirs)
        assert {f.name: getattr(ours, f.name) for f in records.fields(ours)} == dataclasses.asdict(theirs)
    assert Point(1, note="a") == Point(1, note="b")  # note does not compare
    assert Point(1) != Point(2)
    assert Point(1) != DataPoint(1)  # only the very same class compares equal, as dataclass does
    assert Point(1).tags is not Point(1).tags  # a fresh default each time
    assert Point.__match_args__ == DataPoint.__match_args__


def test_frozen_hash_and_copy() -> None:
    p = Point(1, 2, ["t"])
    with pytest.raises(FrozenInstanceError):
        p.x = 3  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del p.y  # type: ignore[misc]
    assert hash(Point3(1, 2, ())) == hash(Point3(1, 2, (), note="other"))  # type: ignore[arg-type]
    with pytest.raises(TypeError):  # a list field: unhashable, as in a dataclass
        hash(Point(1))
    assert copy.deepcopy(p) == p and pickle.loads(pickle.dumps(p)) == p
    s = Point3(1, 2, z=3)
    assert "z" in vars(Point3)["__slots__"] and s.z == 3 and repr(s) == "Point3(x=1, y=2, tags=[], z=3)"
    assert copy.copy(s) == s


def test_fields_and_replace_as_the_standard_library_gives_them() -> None:
    p = Point3(1, z=5)
    assert records.is_record(p) and not records.is_record(Point3) and not dataclasses.is_dataclass(p)
    assert [f.name for f in records.fields(p)] == [f.name for f in dataclasses.fields(DataPoint)] + ["z"]
    assert records.replace(p, y=7) == Point3(1, 7, z=5) and p.y == 0
    assert records.replace(Box([1]), items=[4, 5]).total == 9  # through __init__: __post_init__ runs again
    with pytest.raises(ValueError, match="init=False"):
        records.replace(Box([1]), total=3)
    theirs = DataPoint(1, tags=["a"])  # a dataclass: through dataclasses
    assert records.is_record(theirs) and records.replace(theirs, y=2) == DataPoint(1, 2, ["a"])
    assert [f.name for f in records.fields(theirs)] == ["x", "y", "tags", "note"]
    with pytest.raises(TypeError, match="neither a record nor a dataclass"):
        records.fields(object())


def test_a_slotted_record_keeps_its_defaults_in_its_fields_not_in_its_slots() -> None:
    s = Point3(1)
    assert (s.y, s.tags, s.z) == (0, [], 0)
    assert type(vars(Point3)["z"]).__name__ == "member_descriptor"  # the slot itself, no class attribute over it
    with pytest.raises(FrozenInstanceError):
        s.z = 4  # type: ignore[misc]
    assert isinstance(FrozenInstanceError("x"), AttributeError)


def test_bad_declarations_are_refused_as_dataclass_refuses_them() -> None:
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        @datarecord
        class Order:
            a: int = 0
            b: int

    with pytest.raises(ValueError, match="mutable default"):

        @datarecord
        class Shared:
            items: list[int] = []  # noqa: RUF012

    with pytest.raises(ValueError, match="both default and default_factory"):
        records.field(default=1, default_factory=int)


def test_mutable_record_with_post_init() -> None:
    box = Box([1, 2])
    assert box.total == 3
    box.items = [5]
    assert box.items == [5]
    with pytest.raises(TypeError):
        hash(box)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {}, "missing required argument: 'x'"),
        ((1, 2, [], "", 9), {}, "takes 4 positional arguments but 5 were given"),
        ((1,), {"x": 2}, "multiple values for argument 'x'"),
        ((1,), {"w": 2}, "unexpected keyword argument 'w'"),
    ],
)
def test_bad_arguments_are_refused_as_dataclass_refuses_them(args: tuple[Any, ...], kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        Point(*args, **kwargs)


def test_the_product_never_hands_a_record_to_the_dataclasses_functions() -> None:
    """``dataclasses.replace``/``fields``/``is_dataclass`` refuse a record at run time (mypy takes a record for a
    dataclass, so it cannot tell): the product and the tests call this module's, which take both."""
    refused = {"replace", "fields", "is_dataclass"}
    found = []
    root = Path(__file__).resolve().parent.parent
    for path in [*(root / "agentlaunch").rglob("*.py"), *(root / "tests").rglob("*.py"), *(root / "bench").rglob("*.py")]:
        if path.name in ("datarecord.py", "test_datarecord.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module == "dataclasses":
                found += [f"{path.relative_to(root)}:{node.lineno}" for a in node.names if a.name in refused]
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "dataclasses":
                found += [f"{path.relative_to(root)}:{node.lineno}"] if node.attr in refused else []
    assert found == []


def _record_classes() -> list[type]:
    from agentlaunch import events, sinks
    from agentlaunch.token_usage import Usage

    found = [Usage, events.RateWindow]
    for module in (events, sinks):
        found += [
            c
            for c in vars(module).values()
            if isinstance(c, type) and c.__module__ == module.__name__ and records.FIELDS in vars(c)
        ]
    return found


@pytest.mark.parametrize("cls", _record_classes(), ids=lambda c: c.__name__)
def test_the_events_are_frozen_slotted_records_as_a_dataclass_of_the_same_fields(cls: type) -> None:
    """The events, the launch's events and a call's usage: made as ``dataclass(frozen=True, slots=True)`` makes them."""
    names = [f.name for f in records.fields(cls)]
    twin = dataclasses.make_dataclass(cls.__name__, names, frozen=True, slots=True)
    values = [f"v{i}" for i in range(len(names))]
    ours, theirs = cls(*values), twin(*values)
    assert repr(ours) == repr(theirs).replace(twin.__qualname__, cls.__qualname__, 1)
    assert ours == cls(**dict(zip(names, values, strict=True))) and hash(ours) == hash(theirs)
    assert not hasattr(ours, "__dict__") and cls.__match_args__ == twin.__match_args__  # type: ignore[attr-defined]
    assert pickle.loads(pickle.dumps(ours)) == ours and copy.copy(ours) == ours
    if names:
        with pytest.raises(FrozenInstanceError):
            setattr(ours, names[0], "changed")
        assert records.replace(ours, **{names[0]: "w"}) == cls("w", *values[1:])
