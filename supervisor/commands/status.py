"""``donebell status [--json]``: what the supervisor and each role are doing, from files only.

It reads ``health/*.json``, the lock owner records and folder counts; it never locks or creates
anything and starts only ``codex --version`` / ``claude --version`` (``agent_versions``), so it
works (and says so) while the supervisor is down. A recorded pid counts
as running only if a process with that pid *and* that start time exists (pid reuse is death).

Exit codes: 0 healthy, 1 degraded (a role fatal, stale, failing or not running, dead letters, an
outbox record older than ``retry_max_seconds``), 3 not running (no live supervisor). The JSON
shape is stable and documented in ``docs/status.md``. Nothing printed here comes from the
configuration's secrets; error texts from health files are scrubbed of credentials anyway.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from donebell.shared.config import schema, secret_text
from donebell.shared.config.fields import FIELDS
from donebell.shared.config.schema import overridden
from donebell.shared.health import alive, is_stale_written, stale_after, written_age
from donebell.shared.paths import state_dir_path
from donebell.shared.process.runner import Runner, SubprocessRunner
from donebell.shared.statedir import DEAD, OUTBOX, PENDING, SENT, SUPPRESSED, InvalidRecord, StateDir, decode, now
from donebell.shared.states import RESTARTING_STATES, ROLE_NAMES, StatusState
from donebell.supervisor.commands import agent_versions, no_service
from donebell.supervisor.commands.agent_versions import AgentVersion
from donebell.supervisor.commands.config_restart import RESTART_HOW, changed_since_start
from donebell.supervisor.commands.holds import outbox_holds

SCHEMA = 1
EXIT_HEALTHY, EXIT_DEGRADED, EXIT_NOT_RUNNING = 0, 1, 3
DEFAULT_RETRY_MAX_SECONDS = 900.0
_PROBLEM_STATES: frozenset[StatusState] = frozenset(
    {"error", "degraded", "not-running", "stale", "fatal", *RESTARTING_STATES}
)
_SETTLED_STATES: frozenset[StatusState] = frozenset({"ready", "running"})
RESTART_NOTE = "restart to apply"
_CREDENTIAL_PATTERNS = (
    re.compile(r"(?i)(bearer|basic)\s+[A-Za-z0-9._~+/=-]+"),
    re.compile(r"(?<=://)[^/@\s:]+:[^/@\s]+(?=@)"),
    re.compile(r"\btk_[A-Za-z0-9]{8,}"),
)


def collect(state: StateDir, at: float | None = None, runner: Runner | None = None) -> dict[str, Any]:
    """The status document (see ``docs/status.md``); with ``runner``, also the agents' versions."""
    at = now() if at is None else at
    retry_cap, secrets, file_data = _config_facts()
    sup, sup_problem = state.read_health_checked("supervisor")
    sup_alive = alive(sup)
    entries = (sup or {}).get("roles") if sup_alive else None
    roles = {
        name: _role(state, name, (entries or {}).get(name) if isinstance(entries, dict) else None, at, secrets)
        for name in ROLE_NAMES
    }
    restart = changed_since_start((sup or {}).get("config_at_start"), file_data) if sup_alive else []
    _mark_waiting_for_restart(roles, restart)
    queue = _queue(state, at)
    reasons: list[str] = []
    if sup_problem:
        reasons.append(f"supervisor: {sup_problem}")
    sup_written = state.health_written_at("supervisor")  # ages on this machine's clock (skew-proof)
    if sup_alive and is_stale_written(sup, sup_written, at):
        reasons.append("supervisor heartbeat is stale")
    for name, role in roles.items():
        if role["state"] in _PROBLEM_STATES and (sup_alive or role["alive"]):
            reasons.append(f"{name} is {role['state']}")
    backoff = (state.read_health("delivery") or {}).get("server_backoff")  # workers/delivery/server_backoff.py
    if isinstance(backoff, dict) and isinstance(backoff.get("until"), (int, float)) and backoff["until"] > at:
        reasons.append(_scrub(backoff.get("text"), secrets) or "the server is backing the outbox off")
    if queue["dead"]:
        reasons.append(f"{queue['dead']} dead letter(s) in dead/")
    oldest = queue["oldest_outbox_age_seconds"]
    if oldest is not None and oldest > retry_cap:
        reasons.append(f"an outbox record has waited {oldest:.0f}s (more than retry_max_seconds={retry_cap:g})")
    if not sup_alive:
        reasons.append(no_service.reason())
        overall, code = "not-running", EXIT_NOT_RUNNING
    else:
        overall, code = ("degraded", EXIT_DEGRADED) if reasons else ("healthy", EXIT_HEALTHY)
    doc = {
        "schema": SCHEMA,
        "status": overall,
        "exit_code": code,
        "reasons": reasons,
        "generated_at": at,
        "state_dir": str(state.root),
        "supervisor": _supervisor(sup, sup_alive, at, sup_written),
        "roles": roles,
        "queue": queue,
        "restart_to_apply": restart,
    }
    if runner is not None:  # an untested agent is a warning, never a degraded status
        doc["agents"] = {found.agent: found.as_json() for found in agent_versions.probe_all(runner)}
    return doc


def _supervisor(sup: dict[str, Any] | None, is_alive: bool, at: float, written: float | None) -> dict[str, Any]:
    sup = sup or {}
    return {
        "state": ("stale" if is_stale_written(sup, written, at) else sup.get("state")) if is_alive else "not-running",
        "pid": sup.get("pid") if is_alive else None,
        "started_at": sup.get("started_at") if is_alive else None,
        "uptime_seconds": _since(sup.get("started_at"), at) if is_alive else None,
        "heartbeat_at": sup.get("heartbeat_at"),
        "heartbeat_age_seconds": _round(written_age(sup, written, at)),
        "ready_at": sup.get("ready_at") if is_alive else None,
    }


def _role(state: StateDir, name: str, entry: dict[str, Any] | None, at: float, secrets: list[str]) -> dict[str, Any]:
    checked, problem = state.read_health_checked(name)
    health = checked or {}
    written = state.health_written_at(name)
    owner = state.lock_owner(name)
    health_alive = alive(health)
    pid = health.get("pid") if health_alive else (owner or {}).get("pid") if alive(owner) else None
    entry = entry or {}
    if entry.get("state") == "disabled":
        role_state = "disabled"
    elif entry.get("fatal"):
        role_state = "fatal"
    elif health_alive:
        role_state = "stale" if is_stale_written(health, written, at) else str(health.get("state") or "running")
    elif pid is not None:
        role_state = "running"  # holds its lock but has not written health yet
    elif alive(entry):
        role_state, pid = "starting", entry.get("pid")  # spawned, health file not written yet
    elif entry.get("state") in RESTARTING_STATES:
        role_state = str(entry["state"])
    else:
        role_state = "not-running"
    detail = problem or health.get("degraded_reason") or health.get("note") or health.get("gate") or entry.get("reason")
    return {
        "state": role_state,
        "enabled": entry.get("enabled", True) if entry else None,
        "alive": pid is not None,
        "pid": pid,
        "started_at": health.get("started_at") if health_alive else None,
        "uptime_seconds": _since(health.get("started_at"), at) if health_alive else None,
        "heartbeat_at": health.get("heartbeat_at"),
        "heartbeat_age_seconds": _round(written_age(health, written, at)),
        "stale_after_seconds": stale_after(health),
        "passes": health.get("passes"),
        "last_success": health.get("last_success"),
        "last_error": _scrub(health.get("last_error"), secrets),
        "last_error_at": health.get("last_error_at"),
        "detail": _scrub(detail, secrets),
        "restarts": entry.get("restarts", 0),
        "last_exit_code": entry.get("last_exit_code"),
        "next_restart_at": entry.get("next_restart_at"),
        "fatal": bool(entry.get("fatal")),
        **(_wake_facts(health if health_alive else {}) if name == "wake" else {}),
    }


def _wake_facts(health: dict[str, Any]) -> dict[str, Any]:
    """The wake role's subscription (``connecting`` | ``subscribed`` | ``unauthorized`` |
    ``unreachable``) and the other machines it hears on the reply topic (docs/wake.md)."""
    machines = health.get("other_machines")
    heard = [
        {k: m.get(k) for k in ("host", "origin", "seen_at", "via")}
        for m in (machines if isinstance(machines, list) else [])
        if isinstance(m, dict)
    ]
    sub = health.get("subscription")
    return {"subscription": sub if isinstance(sub, str) else None, "other_machines": heard}


def _wake_detail(role: dict[str, Any]) -> str:
    """The wake row's detail: its subscription and the machines it hears, then the usual detail."""
    parts = [f"subscription: {role['subscription']}"] if role.get("subscription") else []
    hosts = [str(m.get("host") or "a machine not named yet") for m in role.get("other_machines") or []]
    if hosts:
        parts.append("hears " + ", ".join(hosts))
    rest = _role_detail(role)
    return "; ".join(parts + ([rest] if rest != "-" else [])) or "-"


def _queue(state: StateDir, at: float) -> dict[str, Any]:
    holds = outbox_holds(state, at)
    oldest: float | None = None
    for key in state.keys(OUTBOX):
        if key in holds:
            continue  # waiting on purpose (quiet hours overnight) is not a delivery falling behind
        stamp = _stamp(state, OUTBOX, key, ("promoted_at", "created_at"))
        if stamp is not None and (oldest is None or stamp < oldest):
            oldest = stamp
    sent = state.keys(SENT)
    last = _stamp(state, SENT, sent[-1], ("created_at",)) if sent else None
    return {
        "pending": state.count(PENDING),
        "outbox": state.count(OUTBOX),
        "held": len(holds),
        "holds": [{"key": key, **hold.as_json()} for key, hold in sorted(holds.items())],
        "dead": state.count(DEAD),
        "sent": len(sent),
        "suppressed": state.count(SUPPRESSED),
        "oldest_outbox_age_seconds": _round(at - oldest) if oldest is not None else None,
        "last_delivery_at": last,
        "last_delivery_age_seconds": _round(at - last) if last is not None else None,
    }


def _stamp(state: StateDir, folder: str, key: str, fields: tuple[str, ...]) -> float | None:
    """The first numeric field of a record; the file's mtime if it has none or is unreadable."""
    path = state.record_path(folder, key)
    try:
        data = state.read_bytes(path)
        record = decode(data, expect_key=key) if data is not None else {}
        for field in fields:
            if isinstance(record.get(field), (int, float)):
                return float(record[field])
        return path.stat().st_mtime
    except (InvalidRecord, OSError):
        return None


def _mark_waiting_for_restart(roles: dict[str, dict[str, Any]], restart: list[str]) -> None:
    """A role the supervisor left disabled whose switch the file has changed since: say so."""
    switches = {"wake": ("wake_",), "remote-scanner": ("watch_roots",)}
    for name, prefixes in switches.items():
        role = roles[name]
        if role["state"] == "disabled" and any(key.startswith(prefixes) for key in restart):
            role["detail"] = f"{role['detail'] or 'disabled'}; the config file changed it since: {RESTART_NOTE}"


def _config_facts() -> tuple[float, list[str], dict[str, Any] | None]:
    """``retry_max_seconds``, the configured secret values (only to scrub them from output) and the
    file's content (to compare the keys that need a restart)."""
    try:
        _, data = schema.read_file()
    except schema.ConfigFileError:
        data = None
    merged = overridden(FIELDS, ("retry_max_seconds",), data or {})
    try:
        cap = float(merged.get("retry_max_seconds", DEFAULT_RETRY_MAX_SECONDS))
    except (TypeError, ValueError):
        cap = DEFAULT_RETRY_MAX_SECONDS
    return cap, secret_text.configured_secrets()[0], data


def _scrub(text: object, secrets: list[str]) -> str | None:
    if text is None:
        return None
    out = secret_text.scrub(str(text), secrets)
    for pattern in _CREDENTIAL_PATTERNS:
        out = pattern.sub("**********", out)
    return out[:300]


def _since(stamp: object, at: float) -> float | None:
    return round(max(0.0, at - float(stamp)), 1) if isinstance(stamp, (int, float)) else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    return f"{s // 3600}h" if s < 172800 else f"{s // 86400}d"


def _role_detail(role: dict[str, Any]) -> str:
    """The table's last column: why a role is not ready, else its last error, else its note."""
    first, second = ("last_error", "detail") if role["state"] in _SETTLED_STATES else ("detail", "last_error")
    return str(role[first] or role[second] or "-")


def render(doc: dict[str, Any]) -> str:
    """The compact human table."""
    sup = doc["supervisor"]
    head = f"donebell: {doc['status']}"
    if sup["pid"]:
        head += f" (supervisor pid {sup['pid']}, up {_ago(sup['uptime_seconds'])})"
    lines = [head, f"{'ROLE':<15} {'STATE':<12} {'PID':>7} {'UP':>5} {'BEAT':>5} {'RESTARTS':>8}  DETAIL"]
    for name, r in doc["roles"].items():
        lines.append(
            f"{name:<15} {r['state']:<12} {r['pid'] or '-':>7} {_ago(r['uptime_seconds']):>5} "
            f"{_ago(r['heartbeat_age_seconds']):>5} {r['restarts']:>8}  "
            + (_wake_detail(r) if name == "wake" else _role_detail(r))[:100]
        )
    agents = [AgentVersion(**{**a, "tested": tuple(a["tested"])}) for a in doc.get("agents", {}).values()]
    if agents:
        lines.append("agents: " + "; ".join(agent_versions.summary(a) for a in agents))
    q = doc["queue"]
    lines.append(
        f"queue: pending {q['pending']}, outbox {q['outbox']} (oldest {_ago(q['oldest_outbox_age_seconds'])}), "
        f"dead {q['dead']}, last delivery "
        + (f"{_ago(q['last_delivery_age_seconds'])} ago" if q["last_delivery_at"] is not None else "never")
    )
    if q["held"]:
        first = min(q["holds"], key=lambda h: h["until"] if h["until"] is not None else float("inf"))
        lines.append(f"held: {q['held']} notification(s) waiting on purpose; the next is {first['text']}")
    lines += [f"! {reason}" for reason in doc["reasons"]]
    if doc["restart_to_apply"]:
        lines.append(
            f"! {RESTART_NOTE}: {', '.join(doc['restart_to_apply'])} changed in the config file since the start; "
            + RESTART_HOW
        )
    lines += [f"! {a.warning}" for a in agents if a.warning]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="donebell status", description="Show the supervisor's and roles' health.")
    parser.add_argument("--json", action="store_true", help="print the stable JSON document (docs/status.md)")
    args = parser.parse_args(argv)
    doc = collect(StateDir(state_dir_path()), runner=SubprocessRunner())  # never .ensure(): status creates nothing
    if args.json:
        sys.stdout.write(json.dumps(doc, indent=2, sort_keys=False) + "\n")
    else:
        sys.stdout.write(render(doc))
    return int(doc["exit_code"])
