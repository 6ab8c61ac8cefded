"""``@datarecord`` behaves as ``@dataclass`` does for what the launch path's classes use (agentlaunch.datarecord)."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from agentlaunch.datarecord import datarecord


@datarecord(frozen=True)
class Point:
    """A frozen record with a default, a factory, a ClassVar and a field left out of repr and equality."""

    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    note: str = field(default="", repr=False, compare=False)
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
    total: int = field(default=0, init=False)

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
        assert dataclasses.asdict(ours) == dataclasses.asdict(theirs)
    assert Point(1, note="a") == Point(1, note="b")  # note does not compare
    assert Point(1) != Point(2)
    assert Point(1) != DataPoint(1)  # only the very same class compares equal, as dataclass does
    assert Point(1).tags is not Point(1).tags  # a fresh default each time
    assert Point.__match_args__ == DataPoint.__match_args__


def test_frozen_hash_and_copy() -> None:
    p = Point(1, 2, ["t"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.y  # type: ignore[misc]
    assert hash(Point3(1, 2, ())) == hash(Point3(1, 2, (), note="other"))  # type: ignore[arg-type]
    with pytest.raises(TypeError):  # a list field: unhashable, as in a dataclass
        hash(Point(1))
    assert copy.deepcopy(p) == p and pickle.loads(pickle.dumps(p)) == p
    s = Point3(1, 2, z=3)
    assert "z" in vars(Point3)["__slots__"] and s.z == 3 and repr(s) == "Point3(x=1, y=2, tags=[], z=3)"
    assert copy.copy(s) == s


def test_dataclasses_functions_see_a_dataclass() -> None:
    p = Point3(1, z=5)
    assert dataclasses.is_dataclass(p)
    assert [f.name for f in dataclasses.fields(p)] == ["x", "y", "tags", "note", "z"]
    assert dataclasses.replace(p, y=7) == Point3(1, 7, z=5)


def test_mutable_record_with_post_init() -> None:
    box = Box([1, 2])
    assert box.total == 3
    box.items = [5]
    assert box.items == [5]
    with pytest.raises(TypeError):
        hash(box)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [((), {}, "missing required argument: 'x'"), ((1, 2, [], "", 9), {}, "takes 4 positional arguments but 5 were given"),
     ((1,), {"x": 2}, "multiple values for argument 'x'"), ((1,), {"w": 2}, "unexpected keyword argument 'w'")],
)  # fmt: skip
def test_bad_arguments_are_refused_as_dataclass_refuses_them(args: tuple[Any, ...], kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        Point(*args, **kwargs)
