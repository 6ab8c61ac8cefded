"""Reading what a provider CLI printed or wrote, whatever its shape.

Every line a CLI prints is input agentlaunch does not control: a field may
hold any JSON value, nested to any depth. The parsers read fields only
through these helpers, so a value of the wrong type becomes a default (or a
refused usage figure), never an exception that would end the session.

Usage figures are taken only when every field is a token count (an ``int``,
not a ``bool``, from 0 up to :data:`~agentlaunch.token_usage.MAX_TOKENS`);
anything else raises :class:`BadUsage`, which the parsers turn into one
warning and no recorded call: never a partial or guessed figure.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from agentlaunch.token_usage import MAX_TOKENS, Usage, usage_problem

MAX_DEPTH = 100  # deeper JSON is not an event any CLI prints; past ~1,000 the json module itself fails
MAX_LABEL = 256  # ids, names and types kept from a line; longer ones are cut (they are shown, never parsed)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # a UTF-16 half, \ud800 to \udfff, written as JSON
SUMMARY_SCAN = 4096  # characters of a tool's input or result looked at for its one-line summary


class BadUsage(ValueError):
    """A usage figure that is not a set of token counts; the message says which field and why."""


# -- fields of any shape -------------------------------------------------------------------------


def obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def items(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def string(value: Any, default: str = "") -> str:
    """``value`` when it is a string, else ``default`` (never ``str()`` of an object or array)."""
    return value if isinstance(value, str) else default


def label(value: Any, default: str = "") -> str:
    """An id, name or type: a string, or an integer written out; cut to :data:`MAX_LABEL` characters."""
    if isinstance(value, str):
        return value[:MAX_LABEL]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < MAX_TOKENS:
        return str(value)
    return default


def opt_label(value: Any) -> str | None:
    """:func:`label`, or None when the value is missing, empty or not a string or integer."""
    return label(value) or None


def count(value: Any) -> int | None:
    """``value`` when it is a token count (an int from 0 below 2**53, not a bool), else None."""
    if type(value) is int and 0 <= value < MAX_TOKENS:
        return value
    return None


def number(value: Any) -> float | None:
    """``value`` as a finite float when it is a JSON number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int):
        return float(value) if abs(value) < MAX_TOKENS else None
    return value if math.isfinite(value) else None


def shown(value: Any, limit: int = 40) -> str:
    """A short, printable rendering of a refused value, for the warning that names it."""
    text = repr(value) if not isinstance(value, dict | list) else type(value).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- usage ---------------------------------------------------------------------------------------


def counts(raw: Any, fields: Iterable[str], required: Iterable[str] = ()) -> dict[str, int]:
    """The token counts ``fields`` of the usage object ``raw``: a missing (or null) optional field is 0.

    Raises BadUsage when ``raw`` is not an object, a required field is missing,
    or any field holds something other than a token count.
    """
    if not isinstance(raw, dict):
        raise BadUsage(f"usage is {shown(raw)}, not an object")
    needed = set(required)
    found: dict[str, int] = {}
    for name in fields:
        value = raw.get(name)
        if value is None:
            if name in needed:
                raise BadUsage(f"{name} is missing")
            found[name] = 0
            continue
        checked = count(value)
        if checked is None:
            raise BadUsage(f"{name} is {shown(value)}, not a token count")
        found[name] = checked
    return found


def checked(usage: Usage) -> Usage:
    """``usage`` itself when every field is a token count; else BadUsage (a subtraction went negative, say)."""
    problem = usage_problem(usage)
    if problem is not None:
        raise BadUsage(problem)
    return usage


def part_of(part: int, whole: int, part_name: str, whole_name: str) -> int:
    """``whole - part``; BadUsage when ``part`` is larger (cached tokens above the input that includes them)."""
    if part > whole:
        raise BadUsage(f"{part_name} ({part:,}) is more than {whole_name} ({whole:,}), which includes it")
    return whole - part


def refused(provider: str, call_id: str | None, why: BadUsage) -> str:
    """The one warning for a call whose usage was refused."""
    which = f" {call_id}" if call_id else ""
    return f"ignored the usage of {provider} call{which}: {why}; the call is not counted"


# -- lines ---------------------------------------------------------------------------------------


def loads(text: str) -> Any:
    """``json.loads`` for untrusted text; ValueError for anything that is not JSON agentlaunch reads.

    Also refused: nesting deeper than :data:`MAX_DEPTH` (the json module raises
    RecursionError near 1,000 levels, and printing such a value again would
    fail the same way). Lone UTF-16 surrogates (``"\\ud800"``), which could
    not be written back out as UTF-8, become U+FFFD.
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError("nested too deep to parse") from None
    # A cheap bound first: nesting is never deeper than the number of brackets.
    if isinstance(value, dict | list) and text.count("{") + text.count("[") > MAX_DEPTH and _too_deep(value):
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    if _SURROGATE_ESCAPE.search(text):
        value = _without_surrogates(value)
    return value


def _too_deep(value: Any) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        children = current.values() if isinstance(current, dict) else current
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        # Through UTF-16, a pair stays one character and a lone half becomes U+FFFD.
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace") if _has_surrogate(value) else value
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# -- summaries -----------------------------------------------------------------------------------

SUMMARY_KEYS = ("command", "file_path", "path", "pattern", "url", "query", "description")


def summarize(value: Any, limit: int = 120) -> str:
    """One readable line for a tool's input or result, whatever its shape and size.

    Only the first :data:`SUMMARY_SCAN` characters are looked at: a 50 MB tool
    result is summarized as fast as a short one.
    """
    if isinstance(value, Mapping):
        for key in SUMMARY_KEYS:
            if isinstance(value.get(key), str):
                text = value[key][:SUMMARY_SCAN]
                break
        else:
            text = _dumps_head(value)
    elif isinstance(value, list):
        text = _join_head(value)
    elif isinstance(value, str):
        text = value[:SUMMARY_SCAN]
    else:
        text = str(value)  # a JSON scalar: short
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _join_head(parts: list[Any]) -> str:
    """The text parts of a content list, joined, up to :data:`SUMMARY_SCAN` characters."""
    out: list[str] = []
    size = 0
    for part in parts:
        if isinstance(part, dict):
            piece = string(part.get("text"))
        elif isinstance(part, str):
            piece = part
        else:
            piece = str(part) if not isinstance(part, list) else _dumps_head(part)
        out.append(piece[: SUMMARY_SCAN - size])
        size += len(out[-1]) + 1
        if size >= SUMMARY_SCAN:
            break
    return " ".join(out)


def _dumps_head(value: Any) -> str:
    """The start of ``value`` as JSON (depth is bounded by :func:`loads`, so this cannot recurse away)."""
    try:
        return json.dumps(value, ensure_ascii=False)[:SUMMARY_SCAN]
    except (ValueError, TypeError, RecursionError):
        return "…"


class Recent:
    """A set that remembers at most ``size`` keys, forgetting the oldest: ids seen in a stream that may never end."""

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self._keys: dict[Any, None] = {}

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, key: Any) -> None:
        """Remember ``key`` (as the newest)."""
        self._keys.pop(key, None)
        self._keys[key] = None
        if len(self._keys) > self.size:
            del self._keys[next(iter(self._keys))]

    def first_time(self, key: Any) -> bool:
        """True the first time ``key`` is seen (and remember it)."""
        if key in self._keys:
            return False
        self.add(key)
        return True

    def clear(self) -> None:
        self._keys.clear()


def kind_name(value: Any) -> str:
    """An event type for :class:`~agentlaunch.events.Unknown`: the string, else what kind of value stood there."""
    return label(value) or ("None" if value is None else f"<{type(value).__name__}>")


def file_key(value: Any) -> str | None:
    """``value`` when it can stand in a file-name pattern (letters, digits, ``-``, ``_``, ``.``; no ``..``), else None.

    Thread and session ids come from the CLI's output and are used to find its
    files; an id such as ``*`` or ``../x`` must not pick other files.
    """
    if not isinstance(value, str) or not value or len(value) > MAX_LABEL or ".." in value:
        return None
    return value if all(c.isascii() and (c.isalnum() or c in "-_.") for c in value) else None
