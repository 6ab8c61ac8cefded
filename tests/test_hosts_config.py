"""``hosts:`` of config.yaml read and checked, and the ssh command lines built from it (no server needed: the ones
that connect are in test_hosts.py and test_hosts_faults.py)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

from agentlaunch.definitions.settings import load_settings
from agentlaunch.errors import DefinitionError, StateError
from agentlaunch.hosts import ssh
from agentlaunch.hosts.config import Host, parse_hosts
from tests.support.cli_runs import run_cli_inprocess

WEIRD = ["it's", 'say "hi"', "a b", "line1\nline2", "$HOME", "`id`", "$(id)", ";touch x", "\\", "*", "~", "", "-n"]
"""Words a shell would misread, each of which must reach the host's agentlaunch as written."""


def write_config(config: dict[str, object]) -> None:
    folder = Path(os.environ["AGENTLAUNCH_CONFIG_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def test_both_forms_are_read_in_order(isolated_home: Path) -> None:
    write_config(
        {
            "hosts": {
                "devbox": "me@devbox",
                "build": {"ssh": "ssh://b:2222", "agents_dir": "~/agents", "socket": "al", "timeout": 2},
            }
        }
    )
    hosts = load_settings().hosts
    assert hosts == (
        Host(name="devbox", ssh="me@devbox"),
        Host(name="build", ssh="ssh://b:2222", agents_dir="~/agents", socket="al", timeout=2.0),
    )


@pytest.mark.parametrize(
    ("hosts", "said"),
    [
        ({"bad name": "x"}, "hosts.bad name: a host name is letters"),
        ({"b": "-oProxyCommand=touch /tmp/x"}, "hosts.b.ssh: expected an SSH destination"),
        ({"b": "me@host extra"}, "hosts.b.ssh: expected an SSH destination"),
        ({"b": {"ssh": "h", "socket": "a b"}}, "hosts.b.socket: expected a tmux server name"),
        ({"b": {"ssh": "h", "agents_dir": "a\nb"}}, "hosts.b.agents_dir: expected a path"),
        ({"b": {"ssh": "h", "timeout": 0}}, "hosts.b.timeout: expected seconds"),
        ({"b": {"ssh": "h", "port": 22}}, "hosts.b.port: unknown key"),
        ({"b": 3}, "hosts.b: expected an SSH destination, or a mapping"),
        (["b"], "hosts: expected a mapping"),
    ],
)
def test_a_bad_host_is_a_definition_error_naming_it(isolated_home: Path, hosts: object, said: str) -> None:
    write_config({"hosts": hosts})
    done = run_cli_inprocess("hosts")
    assert done.returncode == 3 and said in done.stderr.decode(), done.stderr
    assert "Traceback" not in done.stderr.decode()
    with pytest.raises(DefinitionError):
        parse_hosts(hosts, "config.yaml")


def test_an_unknown_host_name_is_a_usage_error_naming_the_hosts(isolated_home: Path) -> None:
    write_config({"hosts": {"devbox": "me@devbox"}})
    for args in (["hosts", "check", "nope"], ["send", "demo", "hi", "--host", "nope"], ["stop", "demo", "--host", "nope"]):
        done = run_cli_inprocess(*args)
        assert done.returncode == 2 and "no host 'nope' in config.yaml (hosts: devbox)" in done.stderr.decode(), args


def test_no_hosts_says_how_to_add_one(isolated_home: Path) -> None:
    done = run_cli_inprocess("hosts")
    assert done.returncode == 0 and "add hosts: to config.yaml" in done.stderr.decode()


def test_the_ssh_command_shares_one_connection_and_forwards_nothing(isolated_home: Path) -> None:
    host = Host(name="devbox", ssh="me@devbox", ssh_config="~/cfg")
    argv = ssh.ssh_argv(host, "agentlaunch fleet --json")
    options = [argv[i + 1] for i, a in enumerate(argv) if a == "-o"]
    assert "ControlMaster=auto" in options and "BatchMode=yes" in options
    assert "ForwardAgent=no" in options and "ClearAllForwardings=yes" in options
    assert not any(o.lower().startswith("stricthostkeychecking") for o in options)  # the user's ssh config decides
    assert argv[1:3] == ["-F", str(Path("~/cfg").expanduser())]
    assert argv[-3:] == ["--", "me@devbox", "agentlaunch fleet --json"]
    control = next(o for o in options if o.startswith("ControlPath="))
    path = Path(control.removeprefix("ControlPath="))
    assert len(str(path)) + 17 <= ssh.SOCKET_LIMIT and len(path.name) == 16
    assert path.parent.stat().st_mode & 0o777 == 0o700 and path.parent.stat().st_uid == os.geteuid()
    other = Host(name="other", ssh="me@devbox")
    assert ssh.control_path(other) != str(path)  # one connection per host


def test_a_control_folder_that_is_a_link_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = Path(tempfile.mkdtemp(prefix="al-rt-"))  # short: a runtime folder over 40 characters is not used
    try:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        (runtime / f"agentlaunch-ssh-{os.geteuid()}").symlink_to(runtime)
        with pytest.raises(StateError, match="not a folder of this user's"):
            ssh.control_path(Host(name="h", ssh="h"))
        (runtime / f"agentlaunch-ssh-{os.geteuid()}").unlink()
        (runtime / f"agentlaunch-ssh-{os.geteuid()}").mkdir(mode=0o755)
        os.chmod(runtime / f"agentlaunch-ssh-{os.geteuid()}", 0o755)
        assert ssh.control_path(Host(name="h", ssh="h")).startswith(str(runtime))
        assert (runtime / f"agentlaunch-ssh-{os.geteuid()}").stat().st_mode & 0o777 == 0o700  # tightened
    finally:
        shutil.rmtree(runtime)


def test_every_word_reaches_the_host_s_shell_as_written() -> None:
    host = Host(name="h", ssh="h", agentlaunch="/opt/a b/agentlaunch")
    command = ssh.remote_command(host, WEIRD)
    echo = "import json, sys; print(json.dumps(sys.argv[1:]))"
    shown = subprocess.run(
        ["sh", "-c", command.replace(shlex.quote(host.agentlaunch), f"python3 -c {shlex.quote(echo)}", 1)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(shown.stdout) == WEIRD


def test_a_home_path_is_the_host_s_home() -> None:
    host = Host(name="h", ssh="h", agents_dir="~/my agents", agentlaunch="~/.local/bin/agentlaunch")
    command = ssh.remote_command(host, ssh.agentlaunch_args(host, ["fleet", "~/x"], agents=True))
    out = subprocess.run(
        ["sh", "-c", f"set -- {command}; printf '%s\\n' \"$@\""], capture_output=True, text=True, env={"HOME": "/h o"}
    ).stdout.splitlines()
    assert out == ["/h o/.local/bin/agentlaunch", "fleet", "~/x", "--agents-dir", "/h o/my agents"]


def test_status_json_leaves_the_fast_path_only_when_hosts_are_configured(isolated_home: Path) -> None:
    from agentlaunch.live import status_fast

    assert status_fast.answer(["--json"]) == 0  # answered here: no config.yaml
    write_config({"max_starting": 2})
    assert status_fast.hosts_configured() is False
    write_config({"max_starting": 2, "hosts": {"devbox": "me@devbox"}})
    assert status_fast.hosts_configured() is True and status_fast.answer(["--json"]) is None  # the full CLI reads them
    assert status_fast.answer(["--line", "demo"]) == 0  # --line is this machine's
    (isolated_home / "config" / "config.yaml").write_text('{"hosts": {"devbox": "me@devbox"}}\n')  # JSON is YAML
    assert status_fast.hosts_configured() is True
