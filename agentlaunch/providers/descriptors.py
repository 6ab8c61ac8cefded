"""What agentlaunch knows about each provider, apart from how to talk to its CLI: one frozen record each.

Rendering, validation, pricing, the meter and the doctor read these facts
through :func:`describe` instead of keeping tables of their own; each adapter
(``claude.py``, ``codex.py``, ...) carries its provider's record as
``descriptor``. They live together here, apart from the adapters, because
definitions, pricing and the meter ask on every command: this module imports
the standard library only (about a millisecond), where the adapter modules
bring the event types and the parsers (about twelve).
"""

from __future__ import annotations

import sys
from pathlib import Path

from agentlaunch.datarecord import datarecord
from agentlaunch.errors import DefinitionError, UsageError


@datarecord(frozen=True)
class InputMode:
    """A leading character that takes text typed into a CLI's interface out of "a message to the model"."""

    char: str
    """The character (``!``, ``/``, ``$``)."""
    what: str
    """What the interface does with the text instead, for the refusal's reason ("runs it as a shell command")."""
    after_space: bool = False
    """The mode holds also when whitespace comes first (the interface strips it before looking)."""
    at_end: bool = False
    """The mode is a completion menu opened by the text's last word starting with ``char``: Enter picks from it."""

    def hits(self, text: str) -> bool:
        """Whether ``text``, typed as it is, lands in this mode."""
        if self.at_end:
            words = text.split()
            return bool(words) and words[-1].startswith(self.char) and not text[-1:].isspace()
        return (text.lstrip() if self.after_space else text).startswith(self.char)


@datarecord(frozen=True)
class InterfaceInput:
    """How a prompt from ``agentlaunch send`` is typed into the CLI's interface so that the model reads it as written.

    Measured on the pinned CLI with a bracketed paste and Enter (``tests/e2e``, docs/scripting.md's table).
    """

    modes: tuple[InputMode, ...] = ()
    """The leading characters that switch the input out of "a message to the model"."""
    pad: str = ""
    """Written before and after the text: the interface strips it before it reads the text, and it keeps every mode
    in :attr:`modes` shut (Codex: a space). Empty: no such neutral character exists, and a text in a mode is refused."""
    strips: bool = False
    """The interface strips whitespace at both ends of what it sends to the model."""

    def typed(self, text: str) -> str | None:
        """What to type so that the model reads ``text``, or None when no such typing exists (it is refused)."""
        if self.pad:
            return self.pad + text + self.pad
        return None if self.mode_of(text) is not None else text

    def mode_of(self, text: str) -> InputMode | None:
        """The mode ``text`` lands in when typed as it is, or None (a message to the model)."""
        return next((mode for mode in self.modes if mode.hits(text)), None)

    @property
    def runs_commands(self) -> bool:
        """Whether a text starting with ``/`` can run a slash command here (``send --command`` has a use)."""
        return any(mode.char == "/" for mode in self.modes)

    def refusal(self, cli: str, text: str, where: str, hint: str = "put a word first") -> str | None:
        """Why ``text`` cannot be handed to ``cli`` on the path ``where`` as it is, or None: the model reads it."""
        mode = self.mode_of(text)
        if mode is None:
            return None
        return (
            f"{cli} {where} {mode.what} when the text starts with {mode.char!r}; the model would not read it as "
            f"written, so it was not sent ({hint})"
        )


@datarecord(frozen=True)
class ProviderDescriptor:
    """Every fact about one provider that code outside its adapter needs."""

    name: str
    """The ``provider`` value in agent.yaml."""
    persistent: bool
    """One CLI process for the whole session (Claude Code), or a fresh one per turn (Codex, Gemini)."""
    default_command: str
    """The CLI started when agent.yaml names no ``command``."""
    install_hint: str
    """What to tell a person whose machine lacks the CLI."""
    instructions_file: str
    """The file the CLI reads its project instructions from (CLAUDE.md, AGENTS.md, GEMINI.md)."""
    deliveries: tuple[str, ...] = ("file",)
    """The ``delivery`` values this provider supports."""
    default_delivery: str = "file"
    """Where the instructions go when agent.yaml does not say (chosen by measurement, see the doctor)."""
    system_prompt_flag: str | None = None
    """For ``delivery: system-prompt``: the CLI flag that takes the instructions file."""
    pricing_id: str | None = None
    """The provider's id in genai-prices' bundled data; None: genai-prices is never asked."""
    context_windows: tuple[tuple[str, int], ...] = ()
    """Known context windows by model-id prefix, most specific first, for when neither agent.yaml nor the CLI says."""
    api: str | None = None
    """The API family the doctor's capture endpoint speaks (``anthropic``, ``responses``, ``gemini``);
    None: the live check does not apply (no real CLI)."""
    settings_env: tuple[str, ...] = ()
    """Prefixes of environment variables that configure this provider (left out of a capture run)."""
    variant_flags: tuple[str, ...] = ()
    """Flags `doctor --live --variants` also measures without (each delivery, with and without them)."""
    skills_route: str | None = None
    """How the CLI finds the agent's installed skills: ``add-dir`` (``--add-dir`` of the skills root, Claude Code's
    layout), ``cli-home`` (the agent's own CLI home links them), None (the index text in the instructions is all)."""
    skills_deliveries: tuple[str, ...] | None = None
    """The deliveries with which the skills route holds; None: every delivery."""
    otel_name: str | None = None
    """The OpenTelemetry GenAI convention's ``gen_ai.provider.name``; None: the provider's own name."""
    interface_input: InterfaceInput = InterfaceInput()
    """How ``agentlaunch send`` types a prompt into the CLI's own interface (its leading-character modes)."""
    compaction_flag: str | None = None
    """The flag that sets where the CLI compacts (``compaction_at`` in agent.yaml); None: it has none."""
    compaction_value: str = "{tokens}"
    """What follows :attr:`compaction_flag`, with the tokens in it (Codex: a ``-c`` config override)."""
    compaction_reserve: int = 0
    """Tokens the CLI keeps below the flag's value: it compacts at the value less these (Claude Code 2.1.332: 33,000)."""
    compaction_flag_min: int = 0
    """The smallest value the flag takes."""
    cache_ttl_env: str | None = None
    """The environment variable that sets the prompt cache's lifetime (``cache_ttl`` in agent.yaml); None: it has none."""
    line_input: InterfaceInput = InterfaceInput()
    """The leading-character modes of the path a headless turn and the line chat hand a prompt down (Claude Code's
    stream-json user message, ``codex exec``'s and ``gemini -p``'s argument); no pad: a text in a mode is refused."""
    fork: str | None = None
    """How the CLI's interface starts a new session from an earlier one's conversation (``agentlaunch fork``), as
    said to a person; None: it cannot, and :attr:`no_fork` says why."""
    no_fork: str = "it has no interface of its own to fork a session in"
    """Why the provider cannot fork a session (when :attr:`fork` is None)."""
    no_resume_elsewhere: str | None = None
    """Why the CLI cannot resume a session in another working directory than the one it ran in (a merged worktree's
    agent comes back in a new folder: :mod:`agentlaunch.live.comeback`), as said to a person; None: it can."""
    thread_held: str | None = None
    """What the CLI says when it refuses a turn because another process writes the session's thread (one writer at a
    time); None: it has no such lock. :mod:`agentlaunch.launch.thread_held` turns it into exit 7 naming the holder."""

    def refuse_fork(self, agent: str) -> None:
        """A usage error naming why ``agent`` cannot be forked, when its provider cannot fork (``fork``, ``run --fork``)."""
        if self.fork is None:
            raise UsageError(
                f"{agent} cannot be forked: {self.no_fork}", hint=f"agentlaunch restart {agent} resumes its session instead"
            )

    def __post_init__(self) -> None:
        if self.skills_route not in (None, "add-dir", "cli-home"):
            raise ValueError(f"{self.name}: unknown skills route {self.skills_route!r}")
        if self.default_delivery not in self.deliveries:
            raise ValueError(f"{self.name}: default delivery {self.default_delivery!r} is not one of {self.deliveries}")
        if ("system-prompt" in self.deliveries) != (self.system_prompt_flag is not None):
            raise ValueError(f"{self.name}: delivery 'system-prompt' and system_prompt_flag go together")

    def finds_skills(self, delivery: str) -> bool:
        """Whether the CLI, delivered so, is pointed at the installed skills (else the index text is all it gets)."""
        return self.skills_route is not None and (self.skills_deliveries is None or delivery in self.skills_deliveries)

    def system_prompt_argv(self, path: Path) -> list[str]:
        """CLI arguments for ``delivery: system-prompt``: the instructions in ``path`` go into the system prompt."""
        if self.system_prompt_flag is None:
            raise ValueError(f"{self.name}: delivery 'system-prompt' is not supported")
        return [self.system_prompt_flag, str(path)]

    def known_window(self, model: str | None) -> int | None:
        """The context window of ``model`` from :attr:`context_windows`, or None."""
        if not model:
            return None
        for prefix, window in self.context_windows:
            if model.startswith(prefix):
                return window
        return None


# -- the API families the doctor's capture endpoint speaks (a descriptor's ``api``)

ANTHROPIC_API = "anthropic"
RESPONSES_API = "responses"
GEMINI_API = "gemini"

# -- the providers

CLAUDE_EXCLUDE_DYNAMIC_FLAG = "--exclude-dynamic-system-prompt-sections"  # the claude adapter passes it, the doctor varies it

CLAUDE = ProviderDescriptor(
    name="claude",
    persistent=True,
    default_command="claude",
    install_hint="install Claude Code: npm install -g @anthropic-ai/claude-code",
    instructions_file="CLAUDE.md",
    deliveries=("system-prompt", "file"),
    # Chosen by measurement with `agentlaunch doctor --live --variants` (figures in the docs):
    # in the system prompt the instructions sit ahead of everything that names the working directory.
    default_delivery="system-prompt",
    system_prompt_flag="--append-system-prompt-file",
    pricing_id="anthropic",
    context_windows=(
        ("claude-sonnet-4-5", 200_000),
        ("claude-opus-4", 200_000),
        ("claude-haiku", 200_000),
        ("claude-opus-5", 1_000_000),
        ("claude", 200_000),
    ),
    api=ANTHROPIC_API,
    settings_env=("ANTHROPIC_", "CLAUDE_"),
    variant_flags=(CLAUDE_EXCLUDE_DYNAMIC_FLAG,),
    # A per-agent CLAUDE_CONFIG_DIR that links them (measured on 2.1.332: --add-dir stops the interface on
    # a folder dialog at every launch; settings list none; a plugin renames them): providers/claude_home.py.
    skills_route="cli-home",
    otel_name="anthropic",
    # Measured on 2.1.332 against the fake API: `--autocompact N` (N "auto" or at least 100k) compacts once a
    # call's input and output reach N - 33,000 (67,001 tokens compacted at --autocompact 100000, 66,995 did not).
    compaction_flag="--autocompact",
    compaction_reserve=33_000,
    compaction_flag_min=100_000,
    # "5m" or "1h"; any other value is ignored by the CLI (it asked for 5 minutes with "bogus", measured).
    cache_ttl_env="CLAUDE_CODE_PROMPT_CACHE_TTL",
    # Measured on 2.1.332 (tests/e2e/test_agent_fork.py): `--resume ID --fork-session --session-id NEW` opens the
    # conversation as a new session named NEW; the old system prompt comes with it (the recorded snapshot).
    fork="claude --resume ID --fork-session",
    # Measured on 2.1.332 (tests/e2e/test_worktree_comeback_e2e.py): `claude --resume ID` (interface and -p) resumes a session
    # begun in another folder; the transcript stays in that folder's projects/ entry, and the hooks name it.
    # Measured on 2.1.332 (a bracketed paste, then Enter): "!" first runs the rest in bash mode at once (no model,
    # no permission prompt); "/" after any whitespace runs a slash command when one has that name. A leading space
    # keeps "!" out of bash mode but reaches the model as a space, so there is no neutral character: refused.
    # "#", "@" (the file is attached too), "?", "&", "$" and a later line's "!" or "/" reach the model as written.
    interface_input=InterfaceInput(
        modes=(
            InputMode("!", "runs it as a shell command (bash mode)"),
            InputMode("/", "runs it as a slash command", after_space=True),
        ),
    ),
    # Measured on 2.1.332, a stream-json user message (headless, the line chat): "/" first runs a slash command or a
    # skill (/cost, /context, /help answer with no model call; /compact compacts; /init and /SKILL send their own
    # prompt instead); an unknown "/notacmd" and a space before "/" reach the model as written. "!" is no bash mode
    # here, and "#", "@", "$", "?", "&", "-", whitespace and a later line's "!" or "/" reach the model as written.
    line_input=InterfaceInput(modes=(InputMode("/", "runs it as a slash command or skill (stream-json input)"),)),
)

CODEX = ProviderDescriptor(
    name="codex",
    persistent=False,
    default_command="codex",
    install_hint="install Codex CLI: npm install -g @openai/codex",
    instructions_file="AGENTS.md",
    deliveries=("developer-instructions", "file"),
    # Measured on 0.171.0 (docs/providers.md): `-c developer_instructions=...` lands right after
    # Codex's base prompt, inside the prefix fresh sessions in differently named projects share.
    default_delivery="developer-instructions",
    pricing_id="openai",
    context_windows=(("gpt-5", 272_000), ("gpt-4.1", 1_047_576), ("o3", 200_000), ("o4", 200_000)),
    # Measured on 0.171.0 against the fake API (notes/codex-gemini-findings.md): before the next call, Codex compacts
    # once the last call's input + output reaches model_auto_compact_token_limit (20,010 compacted at 20,010, not at
    # 20,011): no reserve below it.
    compaction_flag="-c",
    compaction_value="model_auto_compact_token_limit={tokens}",
    api=RESPONSES_API,
    settings_env=("OPENAI_", "CODEX_"),
    # Codex lists only $CODEX_HOME/skills, ~/.agents/skills and the repository's: an agent with skills
    # gets a CODEX_HOME of its own that links them (docs/providers.md).
    skills_route="cli-home",
    otel_name="openai",
    # Measured on 0.171.0 (tests/e2e/test_agent_fork.py): `codex fork THREAD` takes resume's options and opens the
    # conversation as a new thread whose id Codex chooses.
    fork="codex fork THREAD",
    # Measured on 0.171.0 (tests/e2e/test_codex_resume_beside_chat.py): `codex exec resume THREAD` while an app-server
    # holds the thread exits 1 with "thread/resume failed: thread … already has an active writer"; the app-server's
    # own `thread/resume` of it is refused with the same words.
    thread_held="already has an active writer",
    # Measured on 0.171.0 (tests/e2e/test_worktree_comeback_e2e.py): `resume THREAD` (exec, and the app-server's
    # thread/resume) continues a thread begun in another folder; its next turn's environment names the new folder.
    # Measured on 0.171.0: "!" first runs a shell command, "/" first a slash command (an unknown one stays in the
    # box), a last word starting with "$" opens the skills menu that takes Enter. Codex strips whitespace at both
    # ends of what it sends, and looks for "!" and "/" before stripping: a space before and after keeps every mode
    # shut and the model reads the text as written.
    interface_input=InterfaceInput(
        modes=(
            InputMode("!", "runs it as a shell command"),
            InputMode("/", "runs it as a slash command"),
            InputMode("$", "opens its skills menu, which takes the Enter", at_end=True),
        ),
        pad=" ",
        strips=True,
    ),
)

GEMINI = ProviderDescriptor(
    name="gemini",
    persistent=False,
    default_command="gemini",
    install_hint="install Gemini CLI: npm install -g @google/gemini-cli",
    instructions_file="GEMINI.md",
    deliveries=("gemini-home", "file"),
    # Measured on 0.61.0 (docs/providers.md): a per-agent GEMINI_CLI_HOME whose global GEMINI.md
    # carries the text puts it in the system instruction, cached within one project's sessions.
    default_delivery="gemini-home",
    pricing_id="google",
    context_windows=(("gemini", 1_048_576),),
    api=GEMINI_API,
    settings_env=("GEMINI_", "GOOGLE_", "VERTEX"),
    skills_route="cli-home",  # the per-agent Gemini home links them: only with delivery: gemini-home
    skills_deliveries=("gemini-home",),
    otel_name="gcp.gemini",
    # 0.61.0 has no fork command: --resume continues the same session, --session-id starts an empty one. Its
    # --session-file FILE imports a session's file as a new session (a new id Gemini chooses, only the user and
    # model messages kept: read in its bundle, not measured), which agentlaunch does not use yet.
    no_fork="Gemini CLI 0.61 has no fork: its --resume continues the same session (its --session-file import of a "
    "session's file as a new one is not used by agentlaunch yet)",
    # Measured on 0.61.0: `gemini --resume ID` in another folder exits 42, "Error resuming session: No previous sessions
    # found for this project." (its sessions are kept per project folder, each file naming its project's hash).
    no_resume_elsewhere="Gemini CLI 0.61 keeps its sessions per project folder and cannot resume one in another folder",
    # Measured on 0.61.0: "/" after any whitespace runs a slash command (or stays in the box with its menu open); a
    # pasted "!" reaches the model as written (shell mode is a key typed into an empty box, never a paste). Gemini
    # strips whitespace at both ends; a space does not keep "/" out of command mode: refused.
    interface_input=InterfaceInput(
        modes=(InputMode("/", "runs it as a slash command", after_space=True),),
        strips=True,
    ),
    # Measured on 0.61.0, `gemini -p TEXT`: "/init" first is replaced by Gemini's own prompt (a slash command run
    # headless; /about, /cost, /help, /compact reach the model as text, as does a space before "/"). "!" is no shell
    # here. "@PATH" anywhere adds the named file's content after the text, which still reaches the model as written.
    line_input=InterfaceInput(modes=(InputMode("/", "runs it as a slash command (gemini -p)"),)),
)

# Claude Code's protocol served by agentlaunch itself: no pricing id (genai-prices is never asked
# about a fake model) and no API family (the doctor's live check is for real CLIs). Delivered as
# claude's are, so the offline demo shows the default path.
FAKE = ProviderDescriptor(
    name="fake",
    persistent=True,
    default_command=sys.executable,
    install_hint="the fake provider ships with agentlaunch; reinstall agentlaunch",
    instructions_file="CLAUDE.md",
    deliveries=("system-prompt", "file"),
    default_delivery="system-prompt",
    system_prompt_flag="--append-system-prompt-file",
    context_windows=(("fake", 200_000),),
    skills_route="add-dir",  # its CLI is handed Claude Code's flags
)

# In the order people are shown them (`render --provider` choices, error messages).
DESCRIPTORS: dict[str, ProviderDescriptor] = {d.name: d for d in (CLAUDE, CODEX, GEMINI, FAKE)}
PROVIDERS: tuple[str, ...] = tuple(DESCRIPTORS)


def describe(name: str) -> ProviderDescriptor:
    """The descriptor of provider ``name``; a DefinitionError for one this version does not know."""
    try:
        return DESCRIPTORS[name]
    except KeyError:
        raise unknown_provider(name) from None


def unknown_provider(name: str) -> DefinitionError:
    """The error for a provider name this version does not know."""
    return DefinitionError(
        f"provider {name!r} is not supported by this version of agentlaunch (supported: {', '.join(PROVIDERS)})"
    )
