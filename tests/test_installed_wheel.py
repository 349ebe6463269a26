"""What users install is what is tested: the wheel, built from a clean copy of the tree, in a
fresh venv outside the checkout, every verb run from there (issue 24: a wheel that lacked half its
subpackages passed a suite that only ever ran the editable install).

The wheel and the sdist are built once per session (``python -m build``, isolated, as a release
builds them), the wheel installed once; every test then runs the installed ``donebell`` with its
own HOME, config and state folders, from a working directory that is not the checkout, with no
PYTHONPATH. Run alone with ``pytest -m installed_wheel``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from donebell.supervisor.cli import COMMANDS
from donebell.workers import role as role_module
from donebell.workers.hooks import commands as hook_commands
from support.ntfy_standin import NtfyStandin
from support.source_tree import tracked_copy, tracked_files

# Generous: the first test also builds the sdist, two wheels and a venv (about a minute idle, more on a busy machine).
pytestmark = [pytest.mark.installed_wheel, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[1]
CODE_FOLDERS = ("shared", "workers", "supervisor")
HOOK_FIXTURES = REPO / "tests" / "fixtures" / "hooks"
#: Every verb and role the CLI knows (read from the checkout, so a new one is tested here too).
VERBS = tuple(COMMANDS)
ROLES = tuple(role_module.ROLES)


@dataclass(frozen=True)
class Build:
    wheel: Path
    sdist: Path
    wheel_from_sdist: Path


@dataclass(frozen=True)
class Installed:
    venv: Path
    exe: Path
    python: Path


def build(source: Path, out: Path, *kinds: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "build", *kinds, "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Build:
    """wheel + sdist from a clean copy of the tree, and the wheel the sdist builds again."""
    root = tmp_path_factory.mktemp("wheel-build")
    source = tracked_copy(root / "src")
    build(source, root / "dist", "--sdist", "--wheel")  # both from the tree
    (wheel,) = (root / "dist").glob("donebell-*.whl")
    (sdist,) = (root / "dist").glob("donebell-*.tar.gz")
    unpacked = root / "unpacked"
    with tarfile.open(sdist) as archive:
        archive.extractall(unpacked, filter="data")
    (sdist_tree,) = unpacked.iterdir()
    build(sdist_tree, root / "from-sdist", "--wheel")
    (again,) = (root / "from-sdist").glob("donebell-*.whl")
    return Build(wheel, sdist, again)


@pytest.fixture(scope="session")
def installed(built: Build, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel alone in a fresh venv outside the checkout (its dependencies from the index)."""
    venv = tmp_path_factory.mktemp("wheel-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    result = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(built.wheel)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env=clean_env(),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return Installed(venv, venv / "bin" / "donebell", python)


def clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without anything that points Python or donebell at the checkout."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DONEBELL_", "PYTHON", "VIRTUAL_ENV", "PIP_REQUIRE")) and k != "PYTEST_CURRENT_TEST"
    }
    return {**env, **extra}


@dataclass
class User:
    """One isolated user of the installed wheel: HOME, config, state, and a cwd outside the checkout."""

    installed: Installed
    home: Path
    server: str

    def env(self) -> dict[str, str]:
        return clean_env(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            CODEX_HOME=str(self.home / ".codex"),
            CLAUDE_CONFIG_DIR=str(self.home / ".claude"),
            DONEBELL_CONFIG=str(self.home / ".config" / "donebell" / "config.json"),
            DONEBELL_STATE_DIR=str(self.home / ".local" / "state" / "donebell"),
            DONEBELL_SERVER=self.server,
        )

    def run(self, *args: str, stdin: str = "", python_m: bool = False) -> subprocess.CompletedProcess[str]:
        argv = [str(self.installed.python), "-m", "donebell", *args] if python_m else [str(self.installed.exe), *args]
        result = subprocess.run(
            argv, input=stdin, capture_output=True, text=True, timeout=120, cwd=self.home, env=self.env(), check=False
        )
        assert "Traceback" not in result.stdout + result.stderr, f"{args}: {result.stdout[-2000:]}{result.stderr}"
        return result


@pytest.fixture
def user(installed: Installed, tmp_path: Path, srv: NtfyStandin) -> Iterator[User]:
    """A user whose server is the ntfy stand-in on 127.0.0.1 (doctor, test and wake reach it)."""
    home = tmp_path / "home"
    for folder in (".codex", ".claude", ".config"):
        (home / folder).mkdir(parents=True)
    yield User(installed, home, srv.url)


def wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return sorted(archive.namelist())


def test_the_wheel_holds_every_module_of_the_tree_under_one_name(built: Build) -> None:
    """Every .py of shared/, workers/, supervisor/ is in the wheel as donebell/<folder>/...; the
    launchers of ops/ are the donebell package itself; nothing else lands at the top."""
    names = set(wheel_names(built.wheel))
    tracked = [name for name in tracked_files() if name.split("/")[0] in (*CODE_FOLDERS, "ops")]
    expected = {
        f"donebell/{name.removeprefix('ops/')}" if name.startswith("ops/") else f"donebell/{name}" for name in tracked
    }
    assert expected <= names, sorted(expected - names)
    modules = {n for n in names if n.endswith(".py")}
    assert modules == {n for n in expected if n.endswith(".py")}, sorted(modules ^ expected)
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"donebell"}  # no bare shared/ workers/ supervisor/, no tools/ tests/ benchmarks/
    assert "donebell/__main__.py" in names
    assert {f"donebell/{folder}/py.typed" for folder in CODE_FOLDERS} <= names  # PEP 561, per package
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    with zipfile.ZipFile(built.wheel) as archive:
        assert "donebell = donebell.supervisor.cli:main" in archive.read(entry_points).decode()


def test_the_sdist_rebuilds_the_same_wheel(built: Build) -> None:
    """The sdist is complete: the wheel built from it has exactly the files of the one built from the tree."""
    assert wheel_names(built.wheel_from_sdist) == wheel_names(built.wheel)


def test_the_wheel_carries_the_license_and_metadata(built: Build) -> None:
    names = wheel_names(built.wheel)
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE") for n in names), names
    with zipfile.ZipFile(built.wheel) as archive:
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    for field in ("License-Expression: MIT", "Keywords:", "Project-URL:", "Requires-Python:", "Classifier:"):
        assert field in metadata, field


def test_the_install_does_not_point_back_at_the_checkout(installed: Installed) -> None:
    """No .pth file or path in the venv names the source tree: the code runs from site-packages."""
    site = next(installed.venv.glob("lib/python*/site-packages"))
    for pth in site.glob("*.pth"):
        assert str(REPO) not in pth.read_text(encoding="utf-8"), pth
    assert not list(site.glob("__editable__*"))
    assert (site / "donebell" / "supervisor" / "cli.py").is_file()


def test_version_names_the_install(user: User) -> None:
    """`donebell --version` and `python -m donebell --version`: version, Python, this venv's package folder."""
    site = next(user.installed.venv.glob("lib/python*/site-packages"))
    for result in (user.run("--version"), user.run("--version", python_m=True)):
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("donebell ") and f"from {site / 'donebell'} " in result.stdout
        assert f"Python {sys.version_info.major}.{sys.version_info.minor}." in result.stdout


@pytest.mark.parametrize("verb", VERBS)
def test_every_verb_has_help(user: User, verb: str) -> None:
    """`donebell VERB --help` prints help and exits 0, with no traceback (checked in run())."""
    result = user.run(verb, "--help")
    output = result.stdout + result.stderr
    assert "usage" in output.lower(), output
    assert result.returncode == 0, output  # `worker --help` too (it exited 2 before issue 24)


def test_the_read_only_commands_work_from_the_wheel(user: User, srv: NtfyStandin) -> None:
    """status, doctor, config, log, explain and a dry-run install on a fresh machine: no import error."""
    assert user.run("config", "path").stdout.strip().endswith("config.json")
    assert user.run("config", "init").returncode == 0
    shown = user.run("config", "show")
    assert shown.returncode == 0 and user.server in shown.stdout, shown.stdout
    assert user.run("config", "check").returncode == 0
    status = user.run("status", "--json")
    json.loads(status.stdout)  # a document, whatever the service's state
    assert user.run("status").stdout.strip()
    doctor = user.run("doctor")
    assert doctor.stdout.strip() and "ModuleNotFoundError" not in doctor.stdout
    before = user.run("log")  # before anything ran: a clear word (its wording is log's own tests'), not a crash
    assert before.returncode in (0, 1) and (before.stdout + before.stderr).strip()
    assert user.run("worker", "maintenance", "--once").returncode == 0
    assert user.run("log").returncode == 0
    explained = user.run("explain", "#00000000")
    assert explained.returncode in (0, 1) and (explained.stdout + explained.stderr).strip()
    sent = user.run("test")
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert srv.wait_for_messages(1, timeout=30)  # delivered by the wheel's own delivery code
    dry = user.run("install", "--dry-run", "--service", "none")
    assert dry.returncode == 0, dry.stdout + dry.stderr


def _claude_stop_payload() -> str:
    for line in (HOOK_FIXTURES / "claude" / "print-tool" / "hooks.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["event"] == "Stop":
            return json.dumps(record["payload"])
    raise AssertionError("the Claude fixture has no Stop hook")


def _copilot_stop_payload() -> str:
    for line in (
        (REPO / "tests" / "fixtures" / "copilot" / "print-simple" / "hooks.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()
    ):
        record = json.loads(line)
        if record["event"] == "agentStop":
            return json.dumps(record["payload"])
    raise AssertionError("the Copilot fixture has no agentStop hook")


def test_every_hook_takes_a_recorded_payload(user: User) -> None:
    """codex-stop, codex-notify, claude and copilot, fed what the real agents sent, exit 0 and record it."""
    stop = json.loads((HOOK_FIXTURES / "codex" / "hook-payloads" / "simple--Stop.json").read_text(encoding="utf-8"))
    notify = json.loads(
        (HOOK_FIXTURES / "codex" / "notify-payloads" / "simple--notify-1.json").read_text(encoding="utf-8")
    )
    runs = {
        "codex-stop": user.run("hook", "codex-stop", stdin=json.dumps(stop["stdin"])),
        "codex-notify": user.run("hook", "codex-notify", notify["argv"][-1]),
        "codex-permission": user.run("hook", "codex-permission", stdin=json.dumps(_codex_permission_payload())),
        "claude": user.run("hook", "claude", stdin=_claude_stop_payload()),
        "copilot": user.run("hook", "copilot", "agentStop", stdin=_copilot_stop_payload()),
    }
    assert set(runs) == set(hook_commands())  # every hook subcommand there is
    for name, result in runs.items():
        assert result.returncode == 0, (name, result.stderr)
    assert runs["codex-stop"].stdout == "{}\n"  # the documented answer Codex reads
    assert runs["codex-permission"].stdout == ""  # no decision: Codex's own approval path goes on
    state = user.home / ".local" / "state" / "donebell"
    log = (state / "notify.log").read_text(encoding="utf-8")
    assert "internal error" not in log and "payload refused" not in log, log
    # Two tasks (the Codex thread, whose Stop and notify are one event, and the Claude session)
    # wait in pending/ or have moved on (the hook kicks the wheel's own delivery worker).
    recorded = [
        p for folder in ("pending", "outbox", "suppressed", "sent", "dead") for p in (state / folder).glob("*.json")
    ]
    assert len(recorded) >= 2, log


def _codex_permission_payload() -> dict[str, Any]:
    """The PermissionRequest Codex 0.171 sent for an escalated call (tests/fixtures/approvals/)."""
    run = REPO / "tests" / "fixtures" / "approvals" / "codex" / "exec-approve-for-me-record" / "hooks.jsonl"
    entries = [json.loads(line) for line in run.read_text(encoding="utf-8").splitlines()]
    payload: dict[str, Any] = next(e["payload"] for e in entries if e.get("event") == "PermissionRequest")
    return payload


@pytest.mark.parametrize("role", ROLES)
def test_every_role_makes_one_pass(user: User, role: str) -> None:
    """`donebell worker ROLE --once` imports its modules from the wheel and completes a pass."""
    assert user.run("config", "init").returncode == 0
    if role == "wake":  # off by default, and refused without a token unless told otherwise
        # (in this order: `config set` refuses a wake_enabled that `config check` would fail)
        for key in ("wake_allow_unauthenticated", "wake_enabled"):
            assert user.run("config", "set", key, "true").returncode == 0
    result = user.run("worker", role, "--once")
    assert result.returncode == 0, result.stderr[-2000:]
