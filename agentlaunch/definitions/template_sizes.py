"""What a template operation would build, judged before it runs: the size limits of the template sandbox.

:mod:`agentlaunch.definitions.sandbox` calls these before the operations that
multiply sizes (``*``, ``**``, ``%``-formatting, padding, joining, replacing,
and the filters that do the same) and after everything else; each raises
:class:`TemplateLimit` rather than let a value past the limits be built.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from jinja2.exceptions import SecurityError
from jinja2.sandbox import MAX_RANGE

MAX_VALUE = 16 << 20
"""Characters in any one string (the instructions of a large agent are well under 1 MiB)."""
MAX_ITEMS = 1 << 20
"""Items in any one list, tuple or dict."""
MAX_INT_BITS = 1 << 16
"""Bits in an integer built by ``*`` or ``**`` (Python cannot print one above about 14,000 bits anyway)."""

# Filters that turn their input (or an argument) into text: containers are weighed first.
STRINGIFYING = frozenset(
    (
        "capitalize",
        "center",
        "e",
        "escape",
        "forceescape",
        "format",
        "indent",
        "join",
        "lower",
        "pprint",
        "replace",
        "reverse",
        "safe",
        "string",
        "striptags",
        "title",
        "tojson",
        "trim",
        "truncate",
        "upper",
        "urlencode",
        "urlize",
        "wordcount",
        "wordwrap",
        "xmlattr",
    )
)
# Filters that walk every item of their input.
ITERATING = frozenset(
    (
        "batch",
        "dictsort",
        "groupby",
        "join",
        "list",
        "map",
        "reject",
        "rejectattr",
        "select",
        "selectattr",
        "slice",
        "sort",
        "sum",
        "unique",
    )
)
_PERCENT = re.compile(r"%(?:\(([^)]*)\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?(.)", re.DOTALL)
DIGITS = re.compile(r"\d+")


class TemplateLimit(SecurityError):
    """A template went past one of the render limits."""


def size_of(value: Any) -> int:
    """The direct size of a value: characters of a string, items of a container, else 1."""
    if isinstance(value, str | bytes | bytearray | list | tuple | dict | set | frozenset | range):
        return len(value)
    return 1


def text_weight(value: Any, limit: int) -> int:
    """About how many characters ``str(value)`` has; stops counting once past ``limit``.

    A list holding the same long string a million times is small in memory
    and huge as text: every container is walked (shared items counted each
    time, as ``str`` would print them), with the walk cut short at ``limit``.
    """
    total = 0
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str | bytes | bytearray):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 2
            for key, val in item.items():
                stack.append(key)
                stack.append(val)
                total += 2
                if total > limit:
                    return total
        elif isinstance(item, list | tuple | set | frozenset):
            total += 2
            for element in item:
                stack.append(element)
                total += 2
                if total > limit:
                    return total
        elif isinstance(item, int) and not isinstance(item, bool):
            total += max(1, item.bit_length() // 3)
        else:
            total += 8
        if total > limit or len(stack) > limit:
            return total
    return total


def refuse_chars(size: int, what: str) -> None:
    if size > MAX_VALUE:
        raise TemplateLimit(f"{what}: would build a string of {size:,} characters, above the limit of {MAX_VALUE:,}")


def refuse_items(size: int, what: str) -> None:
    if size > MAX_ITEMS:
        raise TemplateLimit(f"{what}: would build {size:,} items, above the limit of {MAX_ITEMS:,}")


def replaced_size(text: Any, old: Any, new: Any, count: Any) -> int:
    if not isinstance(old, str | bytes) or not isinstance(new, str | bytes):
        return len(text)
    hits = (len(text) + 1) if not old else text.count(old)
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(text) + hits * max(0, len(new) - len(old))


def check_multiply(left: Any, right: Any) -> None:
    for seq, times in ((left, right), (right, left)):
        if isinstance(times, int) and isinstance(seq, str | bytes | list | tuple):
            size = len(seq) * max(times, 0)
            if isinstance(seq, str | bytes):
                refuse_chars(size, "*")
            else:
                refuse_items(size, "*")
    if isinstance(left, int) and isinstance(right, int) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
        raise TemplateLimit(f"*: the product would have more than {MAX_INT_BITS:,} bits")


def check_power(base: Any, exponent: Any) -> None:
    big = isinstance(exponent, int) and (exponent > MAX_INT_BITS or exponent * _bits(base) > MAX_INT_BITS)
    if isinstance(base, int) and abs(base) > 1 and big:
        raise TemplateLimit(f"**: the power would have more than {MAX_INT_BITS:,} bits")


def _bits(value: Any) -> int:
    return value.bit_length() if isinstance(value, int) else 1


def check_percent(template: str, args: Any) -> None:
    """Refuse ``%``-formatting whose widths or precisions (literal or ``*``) would build a huge string."""
    values = list(args) if isinstance(args, tuple) else [args]
    position = 0
    for match in _PERCENT.finditer(template):
        named, width, precision, conversion = match.groups()
        for part in (width, precision):
            if part == "*":
                amount = values[position] if position < len(values) and not named else 0
                position += 1
            else:
                amount = (int(part) if len(part) <= 18 else 10**18) if part else 0
            if isinstance(amount, int) and amount > MAX_VALUE:
                raise TemplateLimit(f"%-format width or precision {amount} is above the limit of {MAX_VALUE:,}")
        if conversion != "%" and not named:
            position += 1


def no_check(value: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    return None


def _arg(args: tuple[Any, ...], kwargs: Mapping[str, Any], index: int, name: str, default: Any) -> Any:
    return args[index] if len(args) > index else kwargs.get(name, default)


def _check_center(value: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    width = _arg(args, kwargs, 0, "width", 80)
    if isinstance(width, int):
        refuse_chars(width, "center")


def _check_indent(value: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    width = _arg(args, kwargs, 0, "width", 4)
    pad = width if isinstance(width, int) else size_of(width)
    text = value if isinstance(value, str) else ""
    refuse_chars(len(text) + (text.count("\n") + 1) * max(pad, 0), "indent")


def _check_format(value: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    if isinstance(value, str):
        check_percent(value, dict(kwargs) if kwargs else tuple(args))


def _check_join(value: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    separator = _arg(args, kwargs, 0, "d", "")
    if isinstance(value, list | tuple | str):
        refuse_chars(sum(size_of(i) for i in value) + size_of(separator) * len(value), "join")


def _check_replace(value: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    if isinstance(value, str) and len(args) >= 2:
        refuse_chars(replaced_size(value, args[0], args[1], _arg(args, kwargs, 2, "count", -1)), "replace")


def _check_batch(value: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    count = _arg(args, kwargs, 0, "linecount", 1)
    if isinstance(count, int):
        refuse_items(count, "batch")


def _check_slice(value: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    count = _arg(args, kwargs, 0, "slices", 1)
    if isinstance(count, int) and count > MAX_RANGE:
        raise TemplateLimit(f"slice: {count:,} slices is above the limit of {MAX_RANGE:,}")


def _check_sum(value: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    start = _arg(args, kwargs, 1, "start", 0)
    if not isinstance(start, int | float):
        # Adding up lists or strings one by one takes time quadratic in their length.
        raise TemplateLimit("sum: only numbers can be added up here (use join for strings)")


def _check_wordwrap(value: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    width = _arg(args, kwargs, 0, "width", 79)
    wrap = _arg(args, kwargs, 2, "wrapstring", None)
    text = value if isinstance(value, str) else ""
    lines = len(text) // max(width if isinstance(width, int) else 1, 1) + text.count("\n") + 1
    refuse_chars(len(text) + lines * (size_of(wrap) if wrap is not None else 1), "wordwrap")


def _check_tojson(value: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    indent = _arg(args, kwargs, 0, "indent", None)
    if (isinstance(indent, int) and indent > 16) or (isinstance(indent, str) and len(indent) > 16):
        raise TemplateLimit("tojson: an indent above 16 is not allowed")


def _check_urlize(value: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
    for arg in (*args, *kwargs.values()):
        if isinstance(arg, str) and len(arg) > 1000:
            raise TemplateLimit("urlize: an argument longer than 1,000 characters is not allowed")


FILTER_CHECKS: dict[str, Callable[[Any, tuple[Any, ...], Mapping[str, Any]], None]] = {
    "center": _check_center,
    "indent": _check_indent,
    "format": _check_format,
    "join": _check_join,
    "replace": _check_replace,
    "batch": _check_batch,
    "slice": _check_slice,
    "sum": _check_sum,
    "wordwrap": _check_wordwrap,
    "tojson": _check_tojson,
    "urlize": _check_urlize,
}
