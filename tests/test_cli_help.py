"""Help and usage errors behave alike for every verb (issue 24, item 7): `--help` exits 0 on stdout
with no traceback, an unknown argument or subcommand exits 2 with a usage line on stderr, and
neither creates the state directory. The top-level help says what donebell is, describes every
verb and lists every option the docs name. Real `donebell` processes."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from donebell.supervisor.cli import COMMANDS, USAGE
from donebell.workers.role import ROLES

REPO = Path(__file__).resolve().parents[1]
CONFIG_ACTIONS = ("init", "show", "check", "path", "set", "unset", "rotate-wake-key")


def _donebell(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


HELPS = [[verb, "--help"] for verb in COMMANDS] + [
    ["--help"],
    ["help"],
    ["worker", "-h"],
    ["hook", "-h"],
    ["hook", "claude", "--help"],
    ["hook", "codex-stop", "--help"],
    *(["config", action, "--help"] for action in CONFIG_ACTIONS),
    *(["worker", role, "--help"] for role in ROLES),
]


@pytest.mark.parametrize("argv", HELPS, ids=[" ".join(a) for a in HELPS])
def test_every_help_exits_0_and_creates_nothing(isolated_env: dict[str, Path], argv: list[str]) -> None:
    res = _donebell(*argv)
    assert res.returncode == 0, (res.stdout, res.stderr)
    assert res.stdout.startswith("usage: ") and res.stderr == ""
    assert not isolated_env["state"].exists()  # no state directory, so no logged warning either
    assert not isolated_env["config"].exists()


USAGE_ERRORS = [
    [],
    ["worker", "foo"],
    ["worker"],
    ["config", "frobnicate"],
    ["config"],
    ["explain"],
    ["explain", "--bogus"],
    ["nonsense"],
    *([verb, "--bogus"] for verb in COMMANDS if verb not in ("hook", "worker")),
]


@pytest.mark.parametrize("argv", USAGE_ERRORS, ids=[" ".join(a) or "(no command)" for a in USAGE_ERRORS])
def test_every_usage_error_exits_2_with_a_usage_line(isolated_env: dict[str, Path], argv: list[str]) -> None:
    res = _donebell(*argv)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "usage: donebell" in res.stderr and "Traceback" not in res.stderr
    assert not isolated_env["state"].exists()


@pytest.mark.parametrize("argv", [["hook", "foo"], ["hook"]], ids=["hook foo", "hook"])
def test_an_unknown_hook_typed_at_a_terminal_is_a_usage_error(isolated_env: dict[str, Path], argv: list[str]) -> None:
    primary, secondary = pty.openpty()  # stdin a terminal: a person typed it
    try:
        cmd = [sys.executable, "-m", "donebell.supervisor.cli", *argv]
        res = subprocess.run(cmd, stdin=secondary, capture_output=True, text=True, timeout=60)
    finally:
        os.close(primary)
        os.close(secondary)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "usage: donebell hook" in res.stderr and res.stdout == ""
    assert not isolated_env["state"].exists()


def test_an_unknown_hook_an_agent_calls_still_exits_0_and_says_why(isolated_env: dict[str, Path]) -> None:
    """Claude Code reads exit 2 from a Stop hook as "keep going": an agent's call never gets it."""
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", "hook", "foo"]
    res = subprocess.run(cmd, input="{}", capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "unknown hook 'foo'" in res.stderr
    assert "unknown hook command" in (isolated_env["state"] / "notify.log").read_text()


def test_the_top_level_help_says_what_donebell_is_and_describes_every_verb() -> None:
    assert "push notification" in USAGE and "Codex" in USAGE and "Claude Code" in USAGE
    listing = USAGE.split("commands:\n", 1)[1]
    for verb in COMMANDS:
        entry = re.search(rf"^  {verb}\b(.*)\n((?:  {{20,}}.*\n)*)", listing, re.MULTILINE)
        assert entry, verb
        words = re.sub(r"\[[^\]]*\]|[A-Z]{2,}|\S*\|\S*", "", entry.group(1) + entry.group(2))
        assert len(words.split()) >= 4, f"{verb} has no description: {entry.group(0)!r}"


def _options_of_every_parser() -> set[str]:
    texts = [_donebell(verb, "--help").stdout for verb in COMMANDS]
    texts += [_donebell("config", action, "--help").stdout for action in CONFIG_ACTIONS]
    texts += [_donebell("worker", role, "--help").stdout for role in ROLES]
    return set(re.findall(r"--[a-z][a-z-]+", "\n".join(texts))) - {"--help"}


def test_the_top_level_help_lists_every_option_the_docs_name(isolated_env: dict[str, Path]) -> None:
    docs = "\n".join(p.read_text(encoding="utf-8") for p in [REPO / "README.md", *(REPO / "docs").glob("*.md")])
    named = set(re.findall(r"--[a-z][a-z-]+", docs)) & _options_of_every_parser()
    assert {"--dry-run", "--purge", "--follow", "--until-idle"} <= named  # the scan found the options
    missing = sorted(option for option in named if option not in USAGE)
    assert not missing, f"options the docs name but `donebell --help` does not: {missing}"
