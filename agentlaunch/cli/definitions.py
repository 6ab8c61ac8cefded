"""Commands about agent definitions: list, validate, render, init."""

from __future__ import annotations

import json
import os
import shutil
import sys
from datetime import date
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from agentlaunch import datarecord as records
from agentlaunch import paths
from agentlaunch.cli.common import AgentArg, AgentsDirOpt, JsonOpt, TemplatesOpt, app, complete_agent, err, out
from agentlaunch.definitions.deliver import deliver
from agentlaunch.definitions.names import agent_names
from agentlaunch.definitions.render import Rendered, render_instructions
from agentlaunch.definitions.skills_install import read_skills
from agentlaunch.definitions.spec import AgentSpec, load_agent, resolve_working_dir
from agentlaunch.errors import AgentlaunchError, DefinitionError, ExitCode, StateError, UsageError
from agentlaunch.launch.placement import exclude_delivered, instructions_path
from agentlaunch.providers.descriptors import PROVIDERS, describe
from agentlaunch.visible import for_markup


def report_volatile(rendered: Rendered) -> None:
    for use in rendered.volatile:
        err.print(
            f"[yellow]warning:[/] {use.source}: uses {{{{{use.variable}}}}}, which changes per "
            f"{'day' if use.variable == 'DATE' else 'directory'}: the cacheable prefix ends at byte "
            f"{rendered.first_volatile_offset:,} of {rendered.size:,}; every change costs a new cache write",
            markup=True,
            soft_wrap=True,
        )


def report_retired(spec: AgentSpec) -> None:
    """A note (not a problem: the CLI still starts) for a model its CLI calls retired
    (:mod:`~agentlaunch.providers.claude_retired`)."""
    from agentlaunch.providers.claude_retired import retirement_note

    if note := retirement_note(spec.provider, spec.model, date.today()):
        err.print(
            f"[yellow]note:[/] {for_markup(str(spec.agent_dir / 'agent.yaml'))}: {for_markup(note)}",
            markup=True,
            highlight=False,
            soft_wrap=True,
        )


@app.command("list")
def list_agents(agents_dir: AgentsDirOpt = None, as_json: JsonOpt = False) -> None:
    """List the agents found, with provider, model, bundles and skills.

    Example: agentlaunch list --json
    """
    root_dir = paths.agents_dir(agents_dir)
    rows: list[dict[str, Any]] = []
    for name in agent_names(root_dir):
        try:
            spec = load_agent(root_dir, name)
            rows.append(
                {
                    "name": name,
                    "display": spec.display,
                    "provider": spec.provider,
                    "model": spec.model,
                    "command": spec.command or describe(spec.provider).default_command,
                    "bundles": [b.name for b in spec.bundles],
                    "skills": [s.name for s in spec.skills],
                    "problems": [],
                }
            )
        except DefinitionError as exc:
            rows.append(
                {
                    "name": name,
                    "display": None,
                    "provider": None,
                    "model": None,
                    "command": None,
                    "bundles": [],
                    "skills": [],
                    "problems": exc.problems,
                }
            )
    if as_json:
        print(json.dumps({"agents_dir": str(root_dir), "agents": rows}, indent=2))
        return
    if not rows:
        err.print(f"no agents in {root_dir} (create the examples with `agentlaunch init`)")
        return
    table = Table("agent", "provider", "model", "bundles", "skills", title=str(root_dir), title_justify="left")
    for row in rows:
        if row["problems"]:
            table.add_row(row["name"], "[red]invalid[/]", "", "", f"run `agentlaunch validate {row['name']}`")
        else:
            table.add_row(
                row["name"], row["provider"], row["model"] or "(default)", ", ".join(row["bundles"]), ", ".join(row["skills"])
            )
    out.print(table)


@app.command()
def validate(
    agents: Annotated[
        list[str] | None, typer.Argument(help="Agents to check (default: all).", autocompletion=complete_agent)
    ] = None,
    agents_dir: AgentsDirOpt = None,
    templates_dir: TemplatesOpt = None,
) -> None:
    """Check agent definitions; print one `FILE: FIELD: message` line per problem.

    Exit 0 when every definition is valid, 3 otherwise.

    Example: agentlaunch validate reviewer planner
    """
    root_dir = paths.agents_dir(agents_dir)
    names = agents or agent_names(root_dir)
    problems: list[str] = []
    for name in names:
        try:
            spec = load_agent(root_dir, name)
            rendered = render_instructions(spec, Path.cwd(), date.today(), templates_dir=templates_dir)
            report_volatile(rendered)
            read_skills(spec.skills, spec.agents_dir)  # what `run` would refuse to install
            report_retired(spec)
        except DefinitionError as exc:
            problems.extend(exc.problems)
    for line in problems:
        print(line)
    if problems:
        raise typer.Exit(int(ExitCode.DEFINITION))
    err.print(f"{len(names)} agent(s) valid in {root_dir}")


def render_target(spec: AgentSpec, provider: str, working_dir: Path, filename: str) -> tuple[Path, bool]:
    """Where ``run`` would deliver the text rendered for ``provider``, and whether that is a ``delivery: file``.

    The agent's delivery when ``provider`` supports it, else that provider's default: ``file`` is the
    working directory; every other delivery keeps the text in the agent's folder in the state directory.
    """
    descriptor = describe(provider)
    delivery = spec.delivery if spec.delivery in descriptor.deliveries else descriptor.default_delivery
    as_run = records.replace(spec, delivery=delivery)
    return instructions_path(as_run, working_dir, paths.state_dir(), filename), delivery == "file"


RenderProviderOpt = Annotated[
    str | None, typer.Option("--provider", help=f"Render for this provider instead of the agent's ({', '.join(PROVIDERS)}).")
]
RenderDirOpt = Annotated[
    Path | None,
    typer.Option("--working-dir", help="The working directory to render for (default: the agent's working_dir, else here)."),
]
StdoutOpt = Annotated[bool, typer.Option("--stdout", help="Print the instructions instead of writing the file.")]
OutputOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the instructions to this file instead (an explicit target).")
]
RenderForceOpt = Annotated[bool, typer.Option("--force", help="Back up a file that is not agentlaunch's, then write.")]
BreakdownOpt = Annotated[
    bool, typer.Option("--breakdown", help="Show each part's bytes, tokens and cost per call (writes nothing).")
]


@app.command()
def render(
    agent: AgentArg,
    provider: RenderProviderOpt = None,
    working_dir: RenderDirOpt = None,
    stdout: StdoutOpt = False,
    output: OutputOpt = None,
    force: RenderForceOpt = False,
    breakdown: BreakdownOpt = False,
    as_json: JsonOpt = False,
    agents_dir: AgentsDirOpt = None,
    templates_dir: TemplatesOpt = None,
) -> None:
    """Render the agent's instructions and write them where `run` delivers them; tell the path.

    A system-prompt agent's text goes to its file in the state directory (never
    into the working directory, where the CLI would read it a second time); a
    `delivery: file` agent's CLAUDE.md, AGENTS.md or GEMINI.md goes into its
    working directory, as a launch writes it. `--output PATH` writes anywhere
    else; `--stdout` prints. Reports the size in bytes and estimated tokens,
    and any variable that changes per launch (it moves the prompt-cache boundary).

    `--breakdown` shows where the prefix's tokens go instead: each section (soul,
    agent instructions, each bundle), the skills index and the template's own
    text, in bytes, estimated tokens, and what each costs per call uncached
    (the input price) and cached (the cache-read price) for the agent's model.

    Example: agentlaunch render reviewer --provider codex --stdout   ·   agentlaunch render reviewer --breakdown
    """
    if provider is not None and provider not in PROVIDERS:
        raise DefinitionError(f"--provider: unknown provider {provider!r} (choose from {', '.join(PROVIDERS)})")
    if stdout and output is not None:
        raise DefinitionError("--stdout and --output: choose one")
    spec = load_agent(paths.agents_dir(agents_dir), agent)
    wd = resolve_working_dir(spec, working_dir, paths.state_dir())
    rendered = render_instructions(spec, wd, date.today(), provider=provider, templates_dir=templates_dir)
    if as_json and not breakdown:
        raise UsageError("--json goes with --breakdown")
    if breakdown:
        if stdout or output is not None:
            raise UsageError("--breakdown writes nothing: leave out --stdout and --output")
        show_breakdown(spec, rendered, wd, provider or spec.provider, templates_dir, as_json=as_json)
        return
    if stdout:
        sys.stdout.write(rendered.text)
    else:
        write_rendered(spec, rendered, wd, provider or spec.provider, output, force=force)
    err.print(f"{rendered.filename}: {rendered.size:,} bytes, ~{rendered.tokens:,} tokens")
    report_volatile(rendered)


def write_rendered(spec: AgentSpec, rendered: Rendered, wd: Path, provider: str, output: Path | None, *, force: bool) -> None:
    """Write the rendered text where `run` delivers it (or to ``output``), and say what happened to the file."""
    if output is not None:
        target, into_working_dir = Path(os.path.abspath(output)), False
    else:
        target, into_working_dir = render_target(spec, provider, wd, rendered.filename)
        if not into_working_dir:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StateError(f"{target.parent}: cannot create the system-prompt folder ({exc.strerror})") from None
    delivery = deliver(target, rendered.text, spec.name, paths.state_dir(), force=force)
    if into_working_dir:
        for notice in exclude_delivered(target, paths.state_dir()):
            err.print(f"[yellow]warning:[/] {for_markup(notice)}", markup=True, soft_wrap=True)
    if delivery.backup:
        err.print(f"moved your {target.name} aside to {delivery.backup}")
    if delivery.previous_agent:
        err.print(f"{delivery.path} held agent {delivery.previous_agent!r}'s instructions; now {spec.name!r}'s")
    state = "wrote" if delivery.changed else "unchanged"
    err.print(f"{state} {delivery.path}", soft_wrap=True)


def show_breakdown(
    spec: AgentSpec, rendered: Rendered, working_dir: Path, provider: str, templates_dir: Path | None, *, as_json: bool
) -> None:
    """``render --breakdown``: the parts, with their cost per call uncached and cached (None: the model is unpriced)."""
    from agentlaunch.definitions.breakdown import breakdown
    from agentlaunch.token_usage import Usage
    from agentlaunch.usage.pricing import Pricer, format_cost

    pricer = Pricer(agents_dir=spec.agents_dir)

    def per_thousand(value: float | None) -> str:
        return format_cost(None if value is None else value * 1000)

    def cost(usage: Usage) -> float | None:
        price = pricer.price(usage, provider, None, spec.model) if spec.model else None
        return price.cost_usd if price else None

    parts = breakdown(spec, rendered, working_dir, date.today(), provider, templates_dir)
    rows: list[dict[str, Any]] = [
        {
            "part": p.label,
            "bytes": p.bytes,
            "tokens": p.tokens,
            "uncached_usd": cost(Usage(input=p.tokens)),
            "cached_usd": cost(Usage(cache_read=p.tokens)),
        }
        for p in parts
    ]
    if as_json:
        print(
            json.dumps(
                {
                    "agent": spec.name,
                    "provider": provider,
                    "model": spec.model,
                    "file": rendered.filename,
                    "bytes": rendered.size,
                    "tokens": rendered.tokens,
                    "parts": rows,
                },
                indent=2,
            )
        )
        return
    table = Table(
        title=f"{for_markup(rendered.filename)} of {for_markup(spec.name)}: {rendered.size:,} bytes, ~{rendered.tokens:,} tokens",
        caption="tokens are estimates (bytes / 4); cost per 1,000 calls at the input price (uncached) and the cache-read "
        "price (cached) of " + for_markup(spec.model or "no model: unpriced"),
    )
    for header in ("part", "bytes", "tokens", "uncached /1k calls", "cached /1k calls"):
        table.add_column(header, justify="left" if header == "part" else "right", no_wrap=True)
    for row in rows:
        table.add_row(
            for_markup(str(row["part"])),
            f"{row['bytes']:,}",
            f"{row['tokens']:,}",
            per_thousand(row["uncached_usd"]),
            per_thousand(row["cached_usd"]),
        )
    out.print(table)


@app.command()
def init(
    directory: Annotated[Path, typer.Argument(help="Where to create the agents directory.")] = Path("agents"),
) -> None:
    """Create an agents directory with the example agents; never overwrites a file.

    Example: agentlaunch init ~/.config/agentlaunch/agents
    """
    source = paths.package_data("agents")
    created = kept = 0
    try:
        for src in sorted(source.rglob("*")):
            if src.is_dir() or "__pycache__" in src.parts:
                continue
            dest = directory / src.relative_to(source)
            if dest.exists():
                kept += 1
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
            created += 1
    except OSError as exc:
        raise AgentlaunchError(f"{directory}: cannot create the agents directory ({exc.strerror})") from None
    err.print(f"{directory}: created {created} file(s), kept {kept} existing file(s) untouched")
    err.print(f"next: agentlaunch list --agents-dir {directory}")
