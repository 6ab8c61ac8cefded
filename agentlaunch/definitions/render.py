"""Rendering: the one sandboxed Jinja environment, the instructions text and the startup message.

Everything here is pure: the same definition and variables give the same
bytes, whatever the process, locale or machine.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
from jinja2.exceptions import SecurityError
from jinja2.loaders import split_template_path
from jinja2.sandbox import SandboxedEnvironment

from agentlaunch import __version__
from agentlaunch.definitions.rendered import (
    INSTRUCTIONS_TEMPLATE,
    STARTUP_TEMPLATE,
    Rendered,
    VolatileUse,
    estimate_tokens,
    part_label,
    quantize_time,
    sections,
    template_search,
    template_source,
    template_variables,
)
from agentlaunch.definitions.sandbox import BoundedEnvironment, TemplateLimit
from agentlaunch.definitions.spec import AgentSpec
from agentlaunch.errors import DefinitionError
from agentlaunch.providers.descriptors import describe

__all__ = [
    "INSTRUCTIONS_TEMPLATE",
    "STARTUP_TEMPLATE",
    "Rendered",
    "VolatileUse",
    "estimate_tokens",
    "part_label",
    "quantize_time",
    "sections",
    "template_variables",
]

# Variables whose value changes per day or per directory: they move the cache boundary.
VOLATILE = ("DATE", "WORKING_DIR")


def make_env(templates_dir: Path | None = None) -> SandboxedEnvironment:
    """The Jinja environment: sandboxed with resource limits (:mod:`~agentlaunch.definitions.sandbox`),
    StrictUndefined, user templates before the defaults."""
    return BoundedEnvironment(
        loader=RegularFileLoader(template_search(templates_dir)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


class RegularFileLoader(jinja2.FileSystemLoader):
    """Jinja's file loader, reading only regular files within the size limit of a definition part.

    A FIFO or device named like a template would otherwise block the render, or read without end.
    """

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Callable[[], bool]]:
        found = template_source(list(self.searchpath), split_template_path(template))
        if found is None:
            raise jinja2.TemplateNotFound(template)
        text, filename = found
        return text, filename, _unchanged_since(filename)


def _unchanged_since(filename: str) -> Callable[[], bool]:
    mtime = os.path.getmtime(filename)
    return lambda: os.path.exists(filename) and os.path.getmtime(filename) == mtime


def _template_line(exc: BaseException, filename: str | None) -> int | None:
    """The template line an exception was raised at (Jinja rewrites tracebacks to show template lines)."""
    line = getattr(exc, "lineno", None)
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename in (filename, "<template>"):
            line = tb.tb_lineno
        tb = tb.tb_next
    return line if isinstance(line, int) else None


def _describe(exc: BaseException, parsing: bool) -> str:
    if isinstance(exc, TemplateLimit):
        return f"{exc} (a limit of the template sandbox)"
    if parsing and isinstance(exc, RecursionError | MemoryError | SyntaxError):
        return "nested too deeply to be read"
    if isinstance(exc, RecursionError):
        return "recursion too deep (a macro, include or recursive loop that calls itself without end?)"
    if isinstance(exc, MemoryError):
        return "ran out of memory"
    text = str(exc)
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def _template_error(
    source: Path | str, exc: BaseException, filename: str | None = None, *, parsing: bool = False
) -> DefinitionError:
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return DefinitionError(f"{source}: template: line {exc.lineno}: {exc.message}")
    if isinstance(exc, SecurityError) and not isinstance(exc, TemplateLimit):
        return DefinitionError(f"{source}: template: refused by the sandbox: {exc}")
    if isinstance(exc, jinja2.UndefinedError):
        return DefinitionError(f"{source}: template: {exc} (known variables: {', '.join(sorted(_KNOWN))})")
    line = _template_line(exc, filename)
    where = f"line {line}: " if line is not None else ""
    return DefinitionError(f"{source}: template: {where}{_describe(exc, parsing)}")


_KNOWN = ("AGENT", "AGENT_DISPLAY", "AGENT_ID", "DATE", "WORKING_DIR")
# What a template can raise besides TemplateError: the sandbox's limits, and whatever Python
# raises on the values it computes (ZeroDivisionError, OverflowError, RecursionError, ...).
_RENDER_ERRORS = (Exception, RecursionError, MemoryError)


def _fresh_budget(env: SandboxedEnvironment) -> None:
    if isinstance(env, BoundedEnvironment):
        env.start()


def render_string(env: SandboxedEnvironment, text: str, variables: Mapping[str, Any], source: Path | str) -> str:
    """Render one user-written text as a template; errors name ``source`` (and the line, where known)."""
    try:
        template = env.from_string(text)
    except _RENDER_ERRORS as exc:
        raise _template_error(source, exc, parsing=True) from None
    _fresh_budget(env)
    try:
        return template.render(**variables)
    except DefinitionError:
        raise
    except _RENDER_ERRORS as exc:
        raise _template_error(source, exc) from None


def render_file(env: SandboxedEnvironment, name: str, variables: Mapping[str, Any]) -> str:
    """Render the template file ``name`` from the environment's search path."""
    _fresh_budget(env)
    try:
        template = env.get_template(name)
        return template.render(**variables)
    except jinja2.TemplateNotFound:
        raise DefinitionError(f"{name}: template not found in {env.loader.searchpath}") from None  # type: ignore[union-attr]
    except DefinitionError:
        raise
    except _RENDER_ERRORS as exc:
        filename = getattr(exc, "filename", None) or _last_template_file(exc) or name
        raise _template_error(filename, exc, filename) from None


def _last_template_file(exc: BaseException) -> str | None:
    """The template file whose code raised ``exc`` (the innermost one, for an error in an included file)."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name.endswith(".j2") or name.endswith(".md"):
            found = name
        tb = tb.tb_next
    return found


def referenced_variables(env: SandboxedEnvironment, text: str, source: Path | str) -> set[str]:
    """The variables ``text`` uses without defining them."""
    try:
        return set(jinja2.meta.find_undeclared_variables(env.parse(text)))
    except _RENDER_ERRORS as exc:
        raise _template_error(source, exc, parsing=True) from None


def _render_text(
    env: SandboxedEnvironment, spec: AgentSpec, variables: Mapping[str, str]
) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The instructions text, and each section's rendered text by its label."""
    rendered = [
        {
            "kind": "soul" if part is spec.soul else "instructions" if part is spec.instructions else "bundle",
            "name": part.name,
            "label": part_label(spec, part),
            "text": render_string(env, part.text, variables, part.path),
        }
        for part in sections(spec)
    ]
    skills = [{"name": s.name, "description": s.description} for s in spec.skills]
    context = {**variables, "sections": rendered, "skills": skills, "order": spec.prefix_order}
    text = render_file(env, INSTRUCTIONS_TEMPLATE, context)
    # One stable trailing newline, whatever the template or the files end with.
    return text.rstrip() + "\n", tuple((r["label"], r["text"]) for r in rendered)


def render_instructions(
    spec: AgentSpec,
    working_dir: Path,
    today: date,
    provider: str | None = None,
    templates_dir: Path | None = None,
) -> Rendered:
    """Render the instructions file text for ``provider`` (default: the agent's)."""
    env = make_env(templates_dir)
    variables = template_variables(spec, working_dir, today)
    text, parts = _render_text(env, spec, variables)

    volatile: list[VolatileUse] = []
    for part in sections(spec):
        for var in sorted(referenced_variables(env, part.text, part.path) & set(VOLATILE)):
            volatile.append(VolatileUse(var, str(part.path)))
    offset = None
    if volatile:
        # Render again with other values for the volatile variables: the first
        # differing byte is where the cacheable prefix ends.
        shifted = {**variables, "DATE": "1970-01-01", "WORKING_DIR": "/nonexistent/" + "x" * 8}
        other = _render_text(env, spec, shifted)[0].encode()
        mine = text.encode()
        offset = next((i for i, (a, b) in enumerate(zip(mine, other, strict=False)) if a != b), min(len(mine), len(other)))
    name = describe(provider or spec.provider).instructions_file
    return Rendered(text=text, filename=name, volatile=tuple(volatile), first_volatile_offset=offset, parts=parts)


@dataclass(frozen=True)
class RunFacts:
    """What is true of one launch only: these go in the startup message, never the prefix."""

    provider: str
    model: str | None
    session_id: str | None
    """None: the CLI names the session as it starts (Codex's thread id) and the launch adopts that name, so no id
    agentlaunch could give here would be the one ``status`` and ``sessions`` show."""
    working_dir: Path
    now: datetime


def render_startup(spec: AgentSpec, facts: RunFacts, templates_dir: Path | None = None) -> str:
    """The one-time startup message for a new session."""
    env = make_env(templates_dir)
    when = quantize_time(facts.now.astimezone())
    variables = {
        **template_variables(spec, facts.working_dir, when.date()),
        "agent": spec,
        "provider": facts.provider,
        "model": facts.model,
        "version": __version__,
        "session_id": facts.session_id,
        "working_dir": str(facts.working_dir),
        "now": when.strftime("%A %Y-%m-%d %H:%M %Z").strip(),
        "accounts": list(spec.accounts),
        "peers": list(spec.peers),
        "startup": render_string(env, spec.startup, template_variables(spec, facts.working_dir, when.date()), "startup")
        if spec.startup
        else "",
    }
    return render_file(env, STARTUP_TEMPLATE, variables).rstrip() + "\n"
