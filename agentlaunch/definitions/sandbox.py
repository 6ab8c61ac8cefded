"""The Jinja sandbox with resource limits: no template can exhaust memory or time.

Jinja's :class:`~jinja2.sandbox.SandboxedEnvironment` keeps templates away
from Python's internals but not from the machine: ``'x' * 10**9``,
``"%*d"|format(10**9, 1)`` or ``lipsum(10**6)`` build gigabytes, nested
``range(100000)`` loops run for hours, and a macro that calls itself ends in
``RecursionError``. :class:`BoundedEnvironment` keeps every render within a
:class:`Budget`:

* loop steps and calls (``MAX_STEPS``): every ``{% for %}`` iteration and
  every call from a template (macros included) costs one;
* the size of any one value (``MAX_VALUE`` characters, ``MAX_ITEMS`` items),
  checked *before* the operations that multiply sizes (``*``, ``**``, ``%``,
  padding and joining methods and filters, ``lipsum``) and after the rest;
* the text written (``MAX_OUTPUT``) and the total size of values built
  (``MAX_WORK``), so a loop cannot spend its steps building big values.

The hooks are the sandbox's own (``call``, ``call_binop``,
``intercepted_binops``, ``wrap_str_format``) plus a code generator that routes
each loop's iterable, each output and each ``~`` through the environment.
A limit reached raises :class:`TemplateLimit` (a ``SecurityError``), which
:mod:`agentlaunch.definitions.render` reports with the file and line.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import LoopContext, Macro
from jinja2.sandbox import MAX_RANGE, SandboxedEnvironment, SandboxedEscapeFormatter, SandboxedFormatter
from jinja2.utils import generate_lorem_ipsum
from markupsafe import Markup

from agentlaunch.definitions.template_sizes import (
    DIGITS,
    FILTER_CHECKS,
    ITERATING,
    MAX_INT_BITS,
    MAX_ITEMS,
    MAX_VALUE,
    STRINGIFYING,
    TemplateLimit,
    check_multiply,
    check_percent,
    check_power,
    no_check,
    refuse_chars,
    refuse_items,
    replaced_size,
    size_of,
    text_weight,
)

MAX_STEPS = 1_000_000
"""Loop iterations plus calls in one render."""
MAX_OUTPUT = 16 << 20
"""Characters one render may write, macros' and blocks' output included."""
MAX_WORK = 64 << 20
"""Characters and items of all the values one render may build (at most 256 MB, at four bytes a character)."""
MACRO_CALL_STEPS = 10
"""What a call of a macro costs in steps: it runs about ten times longer than a loop step."""
MAX_LIPSUM_WORDS = 100_000


class Budget:
    """What one render may still spend."""

    __slots__ = ("steps", "output", "work")

    def __init__(self) -> None:
        self.steps = MAX_STEPS
        self.output = MAX_OUTPUT
        self.work = MAX_WORK


def _is_counted(node: nodes.Node) -> bool:
    return isinstance(node, nodes.Call) and isinstance(node.node, nodes.EnvironmentAttribute) and node.node.name == "counted"


class BoundedCodeGenerator(CodeGenerator):
    """Jinja's code generator, with loops, output and ``~`` going through the environment's limits."""

    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        # The iterable becomes environment.counted(iterable): each step of the loop costs one.
        if not _is_counted(node.iter):
            line = node.iter.lineno
            node.iter = nodes.Call(nodes.EnvironmentAttribute("counted", lineno=line), [node.iter], [], None, None, lineno=line)
        super().visit_For(node, frame)

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.sized(")
        if frame.eval_ctx.volatile:
            self.write("(markup_join if context.eval_ctx.volatile else str_join)((")
        elif frame.eval_ctx.autoescape:
            self.write("markup_join((")
        else:
            self.write("str_join((")
        for arg in node.nodes:
            self.write("environment.textable(")
            self.visit(arg, frame)
            self.write("), ")
        self.write(")))")

    def _output_const_repr(self, group: Iterable[Any]) -> str:
        return f"environment.emit({super()._output_const_repr(group)})"

    def _output_child_pre(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        self.write("environment.emit(")
        super()._output_child_pre(node, frame, finalize)
        self.write("environment.textable(")

    def _output_child_post(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        self.write(")")
        super()._output_child_post(node, frame, finalize)
        self.write(")")


class _BoundedFormatter(SandboxedFormatter):
    """``str.format`` in the sandbox, refusing a field width or precision that would build a huge string."""

    def format_field(self, value: Any, format_spec: str) -> Any:
        env: BoundedEnvironment = self._env  # type: ignore[assignment]
        for digits in DIGITS.findall(format_spec):
            if len(digits) > 8 or int(digits) > MAX_VALUE:
                raise TemplateLimit(f"format width or precision {digits} is above the limit of {MAX_VALUE:,}")
        env.textable(value)
        return super().format_field(value, format_spec)


class _BoundedEscapeFormatter(_BoundedFormatter, SandboxedEscapeFormatter):
    """The same, for a ``Markup`` string (its arguments are escaped)."""


class BoundedEnvironment(SandboxedEnvironment):
    """A ``SandboxedEnvironment`` whose renders stay within a :class:`Budget` (call :meth:`start` before each)."""

    code_generator_class = BoundedCodeGenerator
    intercepted_binops = frozenset(["*", "**", "%", "+"])

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.budget = Budget()
        self.globals["range"] = self._range
        self.globals["lipsum"] = self._lipsum
        self.filters = {name: self._bounded_filter(name, f) for name, f in self.filters.items()}

    def start(self) -> None:
        """A fresh budget, for the next render."""
        self.budget = Budget()

    # -- the hooks the generated code calls ---------------------------------------
    def counted(self, iterable: Any) -> Iterator[Any]:
        """Iterate ``iterable``, each step charged to the budget."""
        budget = self.budget
        for item in iterable:
            budget.steps -= 1
            if budget.steps < 0:
                raise TemplateLimit(f"the template runs more than {MAX_STEPS:,} loop steps and calls")
            yield item

    def emit(self, text: str) -> str:
        """Charge written text to the output limit."""
        self.budget.output -= len(text)
        if self.budget.output < 0:
            raise TemplateLimit(f"the template writes more than {MAX_OUTPUT:,} characters")
        return text

    def textable(self, value: Any) -> Any:
        """Refuse a value whose text would be too large (a container repeating a long string, say)."""
        if isinstance(value, str):
            return value
        weight = text_weight(value, MAX_VALUE)
        if weight > MAX_VALUE:
            raise TemplateLimit(f"a value would print as more than {MAX_VALUE:,} characters")
        self._charge_work(weight)
        return value

    def sized(self, value: Any) -> Any:
        """Check a value just built: its own size, and the total built so far."""
        size = size_of(value)
        if isinstance(value, str | bytes | bytearray):
            if size > MAX_VALUE:
                raise TemplateLimit(f"a string of {size:,} characters is above the limit of {MAX_VALUE:,}")
        elif size > MAX_ITEMS:
            raise TemplateLimit(f"a value of {size:,} items is above the limit of {MAX_ITEMS:,}")
        elif isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
            raise TemplateLimit(f"an integer of {value.bit_length():,} bits is above the limit of {MAX_INT_BITS:,}")
        self._charge_work(size)
        return value

    def _charge_work(self, amount: int) -> None:
        self.budget.work -= amount
        if self.budget.work < 0:
            raise TemplateLimit(f"the template builds more than {MAX_WORK:,} characters of values in all")

    def _step(self, cost: int = 1) -> None:
        self.budget.steps -= cost
        if self.budget.steps < 0:
            raise TemplateLimit(f"the template runs more than {MAX_STEPS:,} loop steps and calls")

    # -- the sandbox's own hooks --------------------------------------------------
    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - as Jinja names it
        __self._step(MACRO_CALL_STEPS if isinstance(__obj, Macro) else 1)
        __self._check_call(__obj, args, kwargs)
        if isinstance(__obj, LoopContext) and args:
            # loop(children) in a recursive for: the inner loop's steps count too.
            args = (__self.counted(args[0]), *args[1:])
        return __self.sized(super().call(__context, __obj, *args, **kwargs))

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            check_multiply(left, right)
        elif operator == "**":
            check_power(left, right)
        elif operator == "%" and isinstance(left, str):
            check_percent(left, right)
            self.textable(right)
        return self.sized(super().call_binop(context, operator, left, right))

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapper = super().wrap_str_format(value)
        if wrapper is None:
            return None
        template: str = value.__self__
        is_format_map = value.__name__ == "format_map"
        formatter = (
            _BoundedEscapeFormatter(self, escape=template.escape) if isinstance(template, Markup) else _BoundedFormatter(self)
        )

        def bounded(*args: Any, **kwargs: Any) -> str:
            if is_format_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one argument")
                kwargs, args = args[0], ()
            return type(template)(formatter.vformat(template, args, kwargs))

        return functools.update_wrapper(bounded, value)

    # -- globals and filters ------------------------------------------------------
    @staticmethod
    def _range(*args: int) -> range:
        rng = range(*args)
        if len(rng) > MAX_RANGE:
            raise TemplateLimit(f"range() of {len(rng):,} numbers is above the limit of {MAX_RANGE:,}")
        return rng

    @staticmethod
    def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # noqa: A002 - Jinja's names
        if not all(isinstance(v, int) for v in (n, min, max)) or n * max > MAX_LIPSUM_WORDS:
            raise TemplateLimit(f"lipsum() of more than {MAX_LIPSUM_WORDS:,} words (n × max) is above the limit")
        return str(generate_lorem_ipsum(n, html, min, max))

    def _bounded_filter(self, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        env = self
        skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0  # context, eval_ctx or environment

        @functools.wraps(func)
        def bounded(*args: Any, **kwargs: Any) -> Any:
            value, rest = (args[skip], args[skip + 1 :]) if len(args) > skip else (None, ())
            if name == "join" and value is not None and not isinstance(value, list | tuple | str):
                # A generator's items must be seen (and sized) before they are joined.
                value = list(env.counted(value))
                args = (*args[:skip], value, *rest)
            if name in ITERATING and size_of(value) > MAX_ITEMS:
                raise TemplateLimit(f"{name}: its input has more than {MAX_ITEMS:,} items")
            for arg in (*rest, *kwargs.values()):
                if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > MAX_VALUE:
                    raise TemplateLimit(f"{name}: argument {arg} is above the limit of {MAX_VALUE:,}")
            if name in STRINGIFYING:
                env.textable(value)
            FILTER_CHECKS.get(name, no_check)(value, rest, kwargs)
            return env.sized(func(*args, **kwargs))

        return bounded

    def _check_call(self, obj: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        """Refuse, before it runs, a call of a built-in method that would build a value past the limits."""
        if not isinstance(obj, types.BuiltinMethodType):
            return
        target = getattr(obj, "__self__", None)
        for arg in (*args, *kwargs.values()):
            if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > MAX_VALUE:
                raise TemplateLimit(f"{obj.__name__}(): argument {arg} is above the limit of {MAX_VALUE:,}")
        if not isinstance(target, str | bytes | bytearray):
            if isinstance(target, list | dict | set) and obj.__name__ in ("append", "extend", "insert", "update", "add"):
                added = sum(size_of(a) if obj.__name__ in ("extend", "update") else 1 for a in args)
                refuse_items(len(target) + added, obj.__name__)
            return
        name, size = obj.__name__, len(target)
        if name in ("center", "ljust", "rjust", "zfill") and args:
            refuse_chars(max(size, args[0]) if isinstance(args[0], int) else size, name)
        elif name == "expandtabs":
            tab = args[0] if args else kwargs.get("tabsize", 8)
            tabs = target.count("\t") if isinstance(target, str) else target.count(b"\t")
            refuse_chars(size + tabs * int(tab), name)
        elif name == "replace" and len(args) >= 2:
            refuse_chars(replaced_size(target, args[0], args[1], args[2] if len(args) > 2 else -1), name)
        elif name == "join" and args:
            items = list(args[0]) if not isinstance(args[0], list | tuple) else args[0]
            refuse_items(len(items), name)
            refuse_chars(sum(size_of(i) for i in items) + size * len(items), name)
        elif name in ("split", "rsplit", "splitlines") and size // 2 + 1 > MAX_ITEMS:
            raise TemplateLimit(f"{name}(): a string of {size:,} characters may split into more than {MAX_ITEMS:,} items")
        elif name == "translate" and args and isinstance(args[0], dict):
            longest = max((size_of(v) for v in args[0].values()), default=1)
            refuse_chars(size * longest, name)


__all__ = ["BoundedEnvironment", "Budget", "TemplateLimit", "text_weight"]
