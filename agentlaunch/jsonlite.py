"""``json.loads`` and ``json.dumps(value, indent=2, ensure_ascii=False)`` without importing ``json``.

``import json`` loads ``re`` and ``enum`` (about 7 ms of CPU on the development machine, a quarter of what
``status --json`` took). Both are here on ``_json``, the C half of ``json`` that ``json`` itself uses: its
scanner reads a document, its string encoder writes each string; what is left to Python is the indentation,
which ``json`` also does in Python (its C encoder takes no ``indent``). A text that is not JSON imports
``json`` to raise the same error ``json.loads`` raises. ``tests/test_jsonlite.py`` holds the output equal to
``json``'s for any JSON value (hypothesis).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

WHITESPACE = " \t\n\r"  # what json.loads skips around a document


class _Decoding:
    """What the C scanner reads of a decoder: ``json.loads``'s defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


try:
    import _json

    _scan: Any = _json.make_scanner(_Decoding())  # type: ignore[arg-type]  # any object with a decoder's attributes
    _string: Any = _json.encode_basestring
except ImportError:  # pragma: no cover  # a Python without CPython's _json
    _scan = _string = None


def loads(text: str) -> Any:
    """``json.loads(text)``: the value, or json's own ``JSONDecodeError`` (a ValueError) for a text that is not JSON."""
    doc = text.strip(WHITESPACE)
    if _scan is not None:
        try:
            value, end = _scan(doc, 0)
        except (StopIteration, ValueError, SystemError):
            pass  # not JSON: json.loads below says why, as it always did
        else:
            if end == len(doc):
                return value
    import json

    return json.loads(text)


def dumps_indented(value: Any) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False)``; any value json would refuse or convert goes to json."""
    if _string is None:  # pragma: no cover
        import json

        return json.dumps(value, indent=2, ensure_ascii=False)
    parts: list[str] = []
    try:
        _write(value, parts, "\n")
    except _NotPlain:
        import json

        return json.dumps(value, indent=2, ensure_ascii=False)
    return "".join(parts)


class _NotPlain(Exception):
    """A value this writer leaves to ``json``: a non-string key, a type json converts or refuses."""


def _write(value: Any, parts: list[str], newline: str) -> None:
    kind = type(value)
    if kind is str:
        parts.append(_string(value))
    elif value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif kind is int:
        parts.append(int.__repr__(value))
    elif kind is float:
        parts.append(_float(value))
    elif kind is list or kind is tuple:
        if not value:
            parts.append("[]")
            return
        inner = newline + "  "
        parts.append("[")
        for i, item in enumerate(value):
            parts.append(inner if i == 0 else "," + inner)
            _write(item, parts, inner)
        parts.append(newline + "]")
    elif kind is dict:
        if not value:
            parts.append("{}")
            return
        inner = newline + "  "
        parts.append("{")
        for i, (key, item) in enumerate(value.items()):
            if type(key) is not str:
                raise _NotPlain
            parts.append((inner if i == 0 else "," + inner) + _string(key) + ": ")
            _write(item, parts, inner)
        parts.append(newline + "}")
    else:
        raise _NotPlain


def _float(value: float) -> str:
    """A float as json writes it (``allow_nan``: NaN and the infinities as JavaScript names them)."""
    if value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == -float("inf"):
        return "-Infinity"
    return float.__repr__(value)
