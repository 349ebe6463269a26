"""``donebell doctor [--json]``: is everything in place for notifications to arrive?

Checks, in order: config (valid, topic, owner-only), state directory (writable, owner-only), each
agent's wiring (Codex Stop hook + notify, and whether Codex trusts the Stop hook; Claude's four
hooks), the agents' versions against the tested releases, that at least one agent is wired, the
background service, the server (``GET /v1/health``), the clock (against the server's Date header), and the queue (failing deliveries, dead letters,
fatal roles, recent log errors).

Each check is ``ok``, ``warn`` (works, but something is missing or degraded), ``fail`` (blocks
notifications), ``unknown`` (could not be determined here) or ``skip`` (not applicable), with the
exact next step. Then which implementation each capability of the platform seam uses here
(``"mechanisms"`` in the JSON document: ``DONEBELL_FORCE_PORTABLE=1`` shows the portable ones).
Exit codes: 0 nothing blocks notifications, 1 at least one ``fail``, 2 usage.
Secrets (token, password, URL credentials) never appear in the output.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any, TextIO

from donebell.shared import paths, platform
from donebell.shared.config import model, secret_text
from donebell.shared.process.runner import Runner, SubprocessRunner
from donebell.shared.statedir import StateDir
from donebell.supervisor.doctor import local as doctor_local
from donebell.supervisor.doctor import runtime as doctor_runtime
from donebell.supervisor.doctor.launcher import check_launchers
from donebell.workers.agents.registry import installer, names
from donebell.workers.kit.install.checks import FAIL, OK, SKIP, WARN, Check

SCHEMA = 1


def run_checks(runner: Runner) -> list[Check]:
    config_check, settings = doctor_local.check_config()
    checks = [config_check, doctor_local.check_state_dir()]
    agents = [check for name in names() for check in _wiring_checks(name, settings)]
    from donebell.supervisor.doctor.agents import agent_version_checks  # (kept apart from the wiring checks)

    checks += agents + agent_version_checks(runner)
    if settings is not None and settings.wake_enabled:
        from donebell.supervisor.doctor.wake import check_wake

        checks.append(check_wake(settings))
    if settings is not None and settings.approvals_enabled:
        from donebell.supervisor.doctor.approvals import check_approvals

        checks.append(check_approvals(settings))
    if not any(c.details.get("wired") for c in agents):
        checks.append(
            Check(
                "agents",
                FAIL,
                "no agent is wired to donebell: nothing will trigger a notification",
                "run `donebell install`",
            )
        )
    state = StateDir(paths.state_dir_path())  # never .ensure(): doctor creates nothing
    if settings is not None and settings.wake_enabled:  # a Continue tap runs the agent in the service's env
        from donebell.supervisor.doctor.service_env import check_service_env

        checks.append(check_service_env(state, runner))
    status = doctor_runtime.status_document(state) if state.root.is_dir() else None
    checks.append(doctor_runtime.check_service(runner, status))
    checks += check_launchers()  # a service that points at a removed install cannot start
    server_time = None
    if settings is not None:
        server_check, server_time = doctor_runtime.check_server(settings)
        checks.append(server_check)
        if server_check.status != FAIL and settings.topic:  # asks ntfy itself, publishing nothing
            from donebell.supervisor.doctor.access import check_access

            checks += check_access(settings)
    else:
        checks.append(Check("server", SKIP, "no valid config to read the server from"))
    checks.append(doctor_runtime.check_clock(server_time))
    checks += _machine_checks(state, settings)
    checks += doctor_runtime.check_queue(state, status, checks)  # the delivery line: as things are now
    return checks


def _wiring_checks(name: str, settings: model.Settings | None) -> list[Check]:
    """One agent's wiring checks, through the registry (doctor names no agent)."""
    agent = installer(name)
    return agent.doctor_checks(settings) if agent is not None else []


def _machine_checks(state: StateDir, settings: Any) -> list[Check]:
    """The wake identity, other machines on the topics, and the service's clock (docs/wake.md)."""
    if not state.root.is_dir():
        return []
    from donebell.supervisor.doctor import machines

    found = [machines.check_service_clock(state)]
    if settings is not None and settings.wake_enabled:
        found.append(machines.check_identity(state))
        found += machines.check_other_machines(state, settings)
    return [check for check in found if check is not None]


def scrub(text: str, secrets: list[str], username: str | None = None) -> str:
    """``text`` without any form of the secrets (raw, escaped, Base64 of ``user:password``...)."""
    return secret_text.scrub(text, secrets, username)


def document(checks: list[Check]) -> dict[str, Any]:
    blocked = any(c.status == FAIL for c in checks)
    return {
        "schema": SCHEMA,
        "ok": not blocked,
        "exit_code": 1 if blocked else 0,
        "checks": [asdict(c) for c in checks],
        "platform": platform.host(),
        "portable_forced": platform.portable_forced(),
        "mechanisms": platform.mechanisms(),
    }


def render_mechanisms() -> list[str]:
    """What runs on this platform, per capability of the platform seam (two lines or three)."""
    forced = f" ({platform.FORCE_PORTABLE_ENV}: portable implementations)" if platform.portable_forced() else ""
    pairs = [f"{name}={how}" for name, how in platform.mechanisms().items()]
    lines, line = [], f"  platform {platform.host()}{forced}:"
    for pair in pairs:
        if len(line) + len(pair) > 100:
            lines.append(line)
            line = " " * 11
        line += f" {pair}"
    return [*lines, line]


def render(checks: list[Check]) -> str:
    lines = ["donebell doctor"]
    for check in checks:
        label = {FAIL: "FAIL"}.get(check.status, check.status)
        lines.append(f"  {label:<7} {check.name:<13} {check.summary}")
        if check.next_step and check.status != OK:
            lines.append(f"  {'':<7} {'':<13} next: {check.next_step}")
    lines += render_mechanisms()
    failures = sum(c.status == FAIL for c in checks)
    warnings = sum(c.status == WARN for c in checks)
    if failures:
        lines.append(f"{failures} problem(s) block notifications; {warnings} warning(s).")
    else:
        lines.append(f"Nothing blocks notifications; {warnings} warning(s).")
    return "\n".join(lines) + "\n"


def main(argv: list[str], *, runner: Runner | None = None, out: TextIO | None = None) -> int:
    parser = argparse.ArgumentParser(prog="donebell doctor", description="Check that notifications can arrive.")
    parser.add_argument("--json", action="store_true", help="print a JSON document instead of the table")
    args = parser.parse_args(argv)
    out = out or sys.stdout
    checks = run_checks(runner or SubprocessRunner())
    doc = document(checks)
    text = json.dumps(doc, indent=2) + "\n" if args.json else render(checks)
    out.write(scrub(text, *secret_text.configured_secrets()))
    return int(doc["exit_code"])
