"""``agentlaunch.jsonlite`` reads and writes exactly as ``json`` does, without importing it."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentlaunch.jsonlite import dumps, dumps_indented, loads

REPO = Path(__file__).resolve().parents[1]
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=30)


def same(a: Any, b: Any) -> bool:
    """Equal, NaN included (json reads NaN back as NaN, which equals nothing)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@given(VALUES)
def test_it_writes_what_json_writes(value: Any) -> None:
    assert dumps_indented(value) == json.dumps(value, indent=2, ensure_ascii=False)


@given(VALUES, st.booleans(), st.booleans())
def test_it_writes_one_line_as_json_does(value: Any, sort_keys: bool, ensure_ascii: bool) -> None:
    assert dumps(value, sort_keys=sort_keys, ensure_ascii=ensure_ascii) == json.dumps(
        value, sort_keys=sort_keys, ensure_ascii=ensure_ascii
    )


@given(VALUES)
def test_it_reads_what_json_reads(value: Any) -> None:
    for text in (json.dumps(value), json.dumps(value, indent=2, ensure_ascii=False), f" \n{json.dumps(value)}\t\r\n"):
        assert same(loads(text), json.loads(text))


@given(VALUES, st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-32"]))
def test_bytes_are_read_as_json_reads_them(value: Any, encoding: str) -> None:
    data = json.dumps(value, ensure_ascii=False).encode(encoding, "surrogatepass")
    assert same(loads(data), json.loads(data))


def read_as_json_reads(doc: str | bytes) -> None:
    """``loads(doc)`` gives what ``json.loads(doc)`` gives, or raises the error of the same type."""
    try:
        expected = json.loads(doc)
    except (ValueError, RecursionError) as exc:
        with pytest.raises(type(exc)):
            loads(doc)
    else:
        assert same(loads(doc), expected)


@given(st.binary())
def test_any_bytes_are_read_as_json_reads_them_or_refused_with_its_error(data: bytes) -> None:
    read_as_json_reads(data)


@given(st.text())
def test_any_text_is_read_as_json_reads_it_or_refused_with_its_error(text: str) -> None:
    read_as_json_reads(text)


@pytest.mark.parametrize("text", ["", "   ", "{", '{"a": 1} x', "[1,]", "nul", '"\\x"', "{'a': 1}", '{"a": 1}{"b": 2}'])
def test_what_is_not_json_raises_jsons_own_error(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as exc:
        loads(text)
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(text)
    assert str(exc.value) == str(theirs.value)


def test_values_json_converts_or_refuses_are_left_to_json() -> None:
    converted = {1: "a", None: [1.5, (2, 3)], "b": {True: False}}
    assert dumps_indented(converted) == json.dumps(converted, indent=2, ensure_ascii=False)
    assert dumps(converted) == json.dumps(converted)
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps_indented({"when": object()})
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps({"when": object()})
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps(looped)


def test_reading_and_writing_import_no_json_nor_re() -> None:
    # -S: the system Python's .pth files may load re at its start (tests/test_launch_imports.py).
    code = (
        f"import sys\nsys.path.insert(0, {str(REPO)!r})\nfrom agentlaunch.jsonlite import dumps, dumps_indented, loads\n"
        "assert loads('{\"a\": [1, 2.5, \"\u00e9\", null, true]}') == {'a': [1, 2.5, '\u00e9', None, True]}\n"
        "dumps_indented({'a': [1, {'b': 'c'}], 'd': {}})\ndumps({'a': [1.5, None]}, sort_keys=True)\n"
        "print(sorted(m for m in ('json', 're', 'enum') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout
