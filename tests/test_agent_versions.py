"""`doctor` and `status` name the installed agent versions and warn outside the tested range.

The agents are real programs on PATH (small scripts answering ``--version`` the way the real
CLIs do: ``codex-cli 0.171.0``, ``2.1.332 (Claude Code)``), run through the real
``SubprocessRunner``.
"""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest
from donebell.shared.process.runner import SubprocessRunner
from donebell.shared.statedir import StateDir
from donebell.supervisor.commands import agent_versions, status
from donebell.supervisor.doctor import agents as doctor_agents
from donebell.supervisor.doctor import command as doctor
from donebell.workers.kit.install.checks import Check, parse_version
from support import npm_clis

OUTPUT = {"codex": "codex-cli {}", "claude": "{} (Claude Code)"}


@pytest.fixture()
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}:/usr/bin:/bin")
    return folder


def install_agent(folder: Path, agent: str, version: str | None = None, *, body: str | None = None) -> None:
    script = folder / agent
    script.write_text(f"#!/bin/sh\n{body or 'echo ' + repr(OUTPUT[agent].format(version))}\n")
    script.chmod(0o755)


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {c.name: c for c in checks}


def test_tested_versions_are_named_and_ok(bin_dir: Path) -> None:
    install_agent(bin_dir, "codex", "0.171.0")
    install_agent(bin_dir, "claude", "2.1.332")
    checks = by_name(doctor_agents.agent_version_checks(SubprocessRunner()))
    assert checks["codex_version"].status == "ok"
    assert checks["codex_version"].summary == "codex 0.171.0 (tested: 0.163.0, 0.168.0, 0.171.0)"
    assert checks["claude_version"].summary == "claude 2.1.332 (tested: 2.1.197, 2.1.332)"
    assert checks["claude_version"].details["program"] == str(bin_dir / "claude")


def test_a_version_between_tested_releases_is_inside_the_range(bin_dir: Path) -> None:
    install_agent(bin_dir, "claude", "2.1.250")
    assert by_name(doctor_agents.agent_version_checks(SubprocessRunner()))["claude_version"].status == "ok"


def test_outside_the_range_warns_with_the_tested_versions(bin_dir: Path) -> None:
    install_agent(bin_dir, "codex", "0.150.2")
    install_agent(bin_dir, "claude", "2.2.0")
    checks = by_name(doctor_agents.agent_version_checks(SubprocessRunner()))
    codex, claude = checks["codex_version"], checks["claude_version"]
    assert (codex.status, claude.status) == ("warn", "warn")
    assert codex.summary.startswith("codex 0.150.2 is older than every tested release (0.163.0, 0.168.0, 0.171.0)")
    assert claude.summary.startswith("claude 2.2.0 is newer than every tested release (2.1.197, 2.1.332)")
    assert claude.details["state"] == "newer"


def test_missing_or_broken_agents(bin_dir: Path) -> None:
    install_agent(bin_dir, "claude", body="echo 'segfault' >&2; exit 3")
    checks = by_name(doctor_agents.agent_version_checks(SubprocessRunner()))
    assert (checks["codex_version"].status, checks["codex_version"].summary) == ("skip", "codex: not on PATH")
    assert checks["claude_version"].status == "unknown"
    assert "`claude --version` failed: segfault" in checks["claude_version"].summary


def test_a_hanging_version_call_costs_one_short_timeout(bin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every agent hangs: the calls run side by side, each bounded by the short timeout."""
    monkeypatch.setattr(agent_versions, "VERSION_TIMEOUT", 1.0)
    for program, _tested in agent_versions.TESTED.values():
        install_agent(bin_dir, program, body="exec sleep 30")
    started = time.monotonic()
    found = agent_versions.probe_all(SubprocessRunner())
    assert time.monotonic() - started < 5
    assert [f.state for f in found] == ["unknown"] * len(agent_versions.TESTED)
    assert all("timed out" in (f.warning or "") for f in found)


def test_status_names_the_versions_and_warns_without_degrading(
    bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_agent(bin_dir, "codex", "0.171.0")
    install_agent(bin_dir, "claude", "2.1.400")
    state_dir = tmp_path / "state"
    monkeypatch.setenv("DONEBELL_STATE_DIR", str(state_dir))
    monkeypatch.setenv("DONEBELL_CONFIG", str(tmp_path / "config.json"))
    doc = status.collect(StateDir(state_dir), runner=SubprocessRunner())
    assert doc["agents"]["codex"]["version"] == "0.171.0" and doc["agents"]["codex"]["state"] == "tested"
    assert doc["agents"]["claude"]["state"] == "newer"
    assert doc["status"] == "not-running" and not any("claude" in r for r in doc["reasons"])
    text = status.render(doc)
    assert (
        "agents: codex 0.171.0 (tested: 0.163.0, 0.168.0, 0.171.0); claude 2.1.400 (tested: 2.1.197, 2.1.332)" in text
    )
    assert "! claude 2.1.400 is newer than every tested release (2.1.197, 2.1.332)" in text
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    status.main(["--json"])
    assert json.loads(out.getvalue())["agents"]["claude"]["version"] == "2.1.400"


def test_collect_without_a_runner_runs_no_agent() -> None:
    """doctor reuses status's document: only `donebell status` itself asks the agents."""
    assert "agents" not in status.collect(StateDir(Path("/nonexistent/donebell-state")))


def test_the_e2e_agent_sets_are_inside_the_tested_range() -> None:
    """Moving the e2e pins (update_newest_pins.py) must come with the tested-range table."""
    for agent_set, packages in npm_clis.pins().items():
        for package, version in packages.items():
            agent = npm_clis.AGENT_OF_PACKAGE[package]
            assert version in agent_versions.TESTED[agent][1], (agent_set, package, version)


def test_version_parsing() -> None:
    assert parse_version("2.1.332 (Claude Code)\n") == (2, 1, 332)
    assert parse_version("codex-cli 0.171.0") == (0, 171, 0)
    assert parse_version("codex-cli 1.2") is None
    assert parse_version("build 10.2.3.4") is None


def test_doctor_lists_the_version_checks(bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`donebell doctor --json` carries both checks next to the wiring checks."""
    install_agent(bin_dir, "claude", "2.1.197")
    for name, folder in (
        ("DONEBELL_CONFIG", "config.json"),
        ("DONEBELL_STATE_DIR", "state"),
        ("CODEX_HOME", "codex"),
        ("CLAUDE_CONFIG_DIR", "claude"),
    ):
        monkeypatch.setenv(name, str(tmp_path / folder))
    out = io.StringIO()
    doctor.main(["--json"], runner=SubprocessRunner(), out=out)
    checks = {c["name"]: c for c in json.loads(out.getvalue())["checks"]}
    assert checks["claude_version"]["status"] == "ok" and checks["claude_version"]["details"]["version"] == "2.1.197"
    assert checks["codex_version"]["status"] == "skip"
