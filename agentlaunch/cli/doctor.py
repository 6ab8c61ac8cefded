"""`agentlaunch doctor AGENT [--live] [--json]`: is the cacheable prefix byte-identical across sessions?"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from agentlaunch import paths
from agentlaunch.cli.common import AgentArg, AgentsDirOpt, JsonOpt, TemplatesOpt, app, out
from agentlaunch.errors import ExitCode
from agentlaunch.prefix.static import StaticReport, static_check
from agentlaunch.visible import visible

if TYPE_CHECKING:  # the live check (fake APIs, http.server) is imported only when --live runs
    from agentlaunch.prefix.live_report import LiveReport

RUN_TIMEOUT = 60.0  # seconds each CLI run gets (doctor_live.RUN_TIMEOUT)


def _kb(n: int) -> str:
    return f"{n:,} B (~{-(-n // 4):,} tok)"


def _print_static(r: StaticReport) -> None:
    out.print(
        f"[bold]doctor {r.agent}[/] ({r.provider}{', ' + r.model if r.model else ''}; delivery {r.delivery}; "
        f"order {r.prefix_order}) · {r.filename} {_kb(r.size)}",
        markup=True,
    )
    mark = "[green]ok[/]" if r.ok else "[yellow]volatile[/]"
    out.print(f"static  {mark} {r.verdict}", markup=True, soft_wrap=True)
    for hit in r.volatile:
        note = " (pinned by working_dir: same every launch)" if hit.pinned else ""
        out.print(f"        {{{{{hit.variable}}}}} at byte {hit.offset:,} in the {hit.section}{note}", markup=False)
    if not r.ok:
        out.print(f"        cacheable before the first volatile byte: {_kb(r.stable_bytes)}")
    if r.parts:
        out.print("parts   " + " · ".join(f"{p.label} {p.bytes:,} B" for p in r.parts), markup=False)
    if r.cross:
        out.print("cross-agent shared prefix (instructions text)   own-first   shared-first")
        for c in r.cross:
            note = "" if c.same_provider else f" [dim]({c.provider}: another cache)[/]"
            out.print(
                f"  {c.agent:<14} bundles {','.join(c.shared_bundles) or '-':<24} {c.own_first_bytes:>7,} B  "
                f"{c.shared_first_bytes:>9,} B{note}",
                markup=True,
            )


def _print_live(r: LiveReport) -> None:
    d, place = r.pair.difference, r.pair.instructions
    # The CLI's version line and argv come from outside (the CLI, agent.yaml): printed with escapes made visible.
    out.print(f"live    {r.provider} {visible(r.cli_version)} · delivery {r.delivery}", markup=False)
    out.print(f"        {visible(r.cli)} {visible(' '.join(r.argv))}", markup=False, no_wrap=True, overflow="ellipsis")
    if r.port_note:
        out.print(f"        {r.port_note}", markup=False)
    out.print(f"        two new sessions in two working dirs: requests of {d.size_a:,} / {d.size_b:,} B (prefix order)")
    if d.identical:
        out.print("        [green]identical[/]: the whole request is a shared prefix", markup=True)
    else:
        out.print(f"        shared prefix {_kb(d.shared_bytes)}; first difference at byte {d.shared_bytes:,}, in {d.section_a}")
        for label, text in (("before", d.before), ("A then", d.after_a), ("B then", d.after_b)):
            line = Text(f"        {label}: ")
            line.append(visible(text), style="bold red" if label != "before" else "dim")
            out.print(line, no_wrap=True, overflow="ellipsis")
    if place.found:
        out.print(
            f"        instructions at bytes {place.start:,}-{place.end:,} ({place.section}): "
            f"{place.inside_bytes:,} of {place.size:,} B inside the shared prefix"
        )
    else:
        out.print("        [yellow]the rendered instructions were not found in the request[/]", markup=True)
    style = "green" if r.control.passed else "bold red"
    out.print(f"control [{style}]{r.control.message}[/]", markup=True, soft_wrap=True)
    others = ", ".join(r.proxy_attempts) or "none"
    out.print(f"network other connection attempts: {others}; other endpoint calls: {', '.join(r.other_calls) or 'none'}")
    if r.variants:
        out.print("variants (two working dirs)        shared prefix        instructions inside   first difference")
        for v in r.variants:
            flag = "exclude-dynamic on " if v.exclude_dynamic else "exclude-dynamic off"
            inside = f"{v.instructions_inside:,}/{v.instructions_size:,} B"
            out.print(f"  {v.delivery:<13} {flag}  {_kb(v.shared_bytes):>20}  {inside:>19}   {v.section}")
    if r.request_parts:
        out.print("request " + " · ".join(f"{p.label} {_kb(p.bytes)}" for p in r.request_parts), markup=False)
    _print_interactive(r)
    out.print(f"verdict {r.verdict}", markup=False, soft_wrap=True)


def _print_interactive(r: LiveReport) -> None:
    """The CLI's own interface (what `agentlaunch run AGENT` at a terminal starts) against the headless run."""
    i = r.interactive
    if i is None:
        return
    if i.no_interface:
        out.print(f"interactive skipped: {i.note}", markup=False)
        return
    if not i.measured or i.difference is None:
        out.print(f"interactive [yellow]not measured[/]: {i.note}", markup=True)
        return
    d = i.difference
    tools = f"; tools {i.tools_headless} headless, {i.tools_interactive} interactive" if i.tools_headless is not None else ""
    if i.same_prefix:
        out.print(
            f"interactive [green]same prefix[/]: the CLI's own interface shares {_kb(d.shared_bytes)} with the headless "
            f"run, up to {d.section_a}{tools}",
            markup=True,
        )
    else:
        out.print(
            f"interactive [yellow]differs[/] from the headless run at byte {d.shared_bytes:,}, in {d.section_a}: their "
            f"turns do not share one cache{tools}",
            markup=True,
        )
    if i.proxy_attempts:
        out.print(f"            the interface also tried (refused): {', '.join(i.proxy_attempts)}", markup=False)


@app.command("doctor")
def doctor(
    agent: AgentArg,
    live: Annotated[
        bool, typer.Option("--live", help="Run the real provider CLI twice against a capture endpoint on 127.0.0.1.")
    ] = False,
    variants: Annotated[
        bool,
        typer.Option(
            "--variants",
            help="With --live on claude: also measure each delivery with and without --exclude-dynamic-system-prompt-sections.",
        ),
    ] = False,
    port: Annotated[
        int, typer.Option("--port", help="Preferred port of the capture endpoint (another one when busy; 0 = any).")
    ] = 0,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds each CLI run gets to call the endpoint.")] = RUN_TIMEOUT,
    agents_dir: AgentsDirOpt = None,
    templates_dir: TemplatesOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check that the agent's cacheable prefix stays byte-identical across sessions.

    Example: agentlaunch doctor reviewer --live
    """
    result: dict[str, Any] = {}
    root: Path = paths.agents_dir(agents_dir)
    static = static_check(root, agent, templates_dir)
    from agentlaunch.prefix.live import live_check
    from agentlaunch.prefix.live_report import report_dict

    result["static"] = report_dict(static)
    live_report = None
    if live:
        live_report = live_check(root, agent, templates_dir=templates_dir, port=port, timeout=timeout, variants=variants)
        result["live"] = report_dict(live_report)
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        _print_static(static)
        if live_report is not None:
            _print_live(live_report)
    if live_report is not None and not live_report.ok:
        raise typer.Exit(int(ExitCode.TURN_FAILED))
