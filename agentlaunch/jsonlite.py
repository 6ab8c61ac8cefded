"""``json.loads``, ``json.dumps`` and ``json.dumps(value, indent=2, ensure_ascii=False)`` without importing ``json``.

``import json`` loads ``re`` and ``enum`` (about 7 ms of CPU on the development machine, a quarter of what
``status --json`` took; before the early start's spawn ``subprocess`` loads ``re`` anyway, so there only
json's own modules are saved, 1-2 ms). All three are here on
``_json``, the C half of ``json`` that ``json`` itself uses: its scanner reads a document, its encoder writes
one on a line (the call ``json.dumps`` makes), its string encoder writes each string of an indented one, whose
indentation is left to Python as ``json`` also leaves it (its C encoder takes no ``indent``). A text that is
not JSON, or a value ``json`` would convert or refuse, goes to ``json`` itself, for the same result or error.
``tests/test_jsonlite.py`` holds each equal to ``json``'s for any JSON value (hypothesis).
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
    _ascii: Any = _json.encode_basestring_ascii
    _encoder: Any = _json.make_encoder
except ImportError:  # pragma: no cover  # a Python without CPython's _json
    _scan = _string = _ascii = _encoder = None


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``: the value, or json's own ``JSONDecodeError`` (a ValueError) for a text that is not JSON.

    Bytes are read as UTF-8 (what agentlaunch writes); any other encoding json finds in them is json's to read."""
    if isinstance(text, str):
        doc = text.strip(WHITESPACE)
    else:
        try:
            doc = text.decode("utf-8").strip(WHITESPACE)
        except UnicodeDecodeError:
            doc = ""  # json.loads below: UTF-16 or -32, or its error
    if _scan is not None and doc:
        try:
            value, end = _scan(doc, 0)
        except (StopIteration, ValueError, SystemError):
            pass  # not JSON: json.loads below says why, as it always did
        else:
            if end == len(doc):
                return value
    import json

    return json.loads(text)


def dumps(value: Any, *, sort_keys: bool = False, ensure_ascii: bool = True) -> str:
    """``json.dumps(value, sort_keys=sort_keys, ensure_ascii=ensure_ascii)``: one line, ``", "`` and ``": "``
    between items."""
    if _encoder is not None:
        # json.encoder.JSONEncoder.iterencode's one-shot call: markers (circular references), default, the
        # string encoder, indent, key and item separators, sort_keys, skipkeys, allow_nan.
        strings = _ascii if ensure_ascii else _string
        encode = _encoder({}, _refuse, strings, None, ": ", ", ", sort_keys, False, True)
        try:
            return "".join(encode(value, 0))
        except _NotPlain:
            pass  # json says what it makes of the value (a non-string key converted) or why it refuses it
    import json

    return json.dumps(value, sort_keys=sort_keys, ensure_ascii=ensure_ascii)


def _refuse(value: Any) -> Any:
    raise _NotPlain


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
