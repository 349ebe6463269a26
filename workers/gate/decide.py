"""The gate's entry point for one candidate: mode and provider dispatch.

Order of checks common to every provider and mode (the provider gates add theirs):

1. a candidate its agent classified as a subagent's at capture (``classification``) never
   notifies on its own -> suppressed ``subagent``;
2. ``idle_detection_mode: off`` promotes every other accepted candidate at once (verdict ``off``);
3. otherwise the record's agent decides (``Gate.evaluate`` of the ``AGENT`` that
   ``workers/agents/<provider>/`` declares, found through the registry).
"""

from __future__ import annotations

from typing import Any

from donebell.workers.agents.registry import agent
from donebell.workers.kit.gate_context import GateContext
from donebell.workers.kit.ladder import CAPTURED_SUBAGENT, decided
from donebell.workers.kit.probe_schedule import capped
from donebell.workers.kit.verdict import Verdict

#: A candidate that crashed the gate is looked at again this often (within the probe cap).
GATE_ERROR_RETRY_SECONDS = 30.0


def evaluate(record: dict[str, Any], ctx: GateContext) -> Verdict:
    """Decide what to do with one pending candidate now."""
    provider = record.get("provider")
    if record.get("classification") == "subagent":
        captured = Verdict.suppress("subagent", "candidate classified as a subagent at capture")
        return decided(CAPTURED_SUBAGENT, captured)
    if ctx.settings.idle_detection_mode == "off":
        return decided("mode-off", Verdict.promote("off", "idle_detection_mode off: every accepted completion is sent"))
    found = agent(provider)
    if found is not None:
        return found.evaluate(record, ctx)
    from donebell.workers.kit.probe_schedule import first_seen

    if ctx.now < first_seen(record, ctx.now) + ctx.settings.idle_probe_grace_seconds:
        waiting = Verdict.wait("unknown-provider", f"provider {provider!r} has no gate", kind="unknown")
        return decided("provider", waiting)
    unknown = f"provider {provider!r} has no gate; unresolved after the probe grace"
    return decided("provider", Verdict.suppress("unverifiable", unknown))


def safe_evaluate(record: dict[str, Any], ctx: GateContext) -> Verdict:
    """:func:`evaluate`, with an unexpected error turned into an unknown wait (``gate-error``)."""
    try:
        return evaluate(record, ctx)
    except Exception as exc:  # noqa: BLE001 - one odd candidate must not stop the pass
        ctx.state.log(
            "error", "gate evaluation failed", key=record.get("key"), error=f"{type(exc).__name__}: {exc}"[:300]
        )
        retry = capped(GATE_ERROR_RETRY_SECONDS, ctx.settings.unknown_retry_max_seconds)
        failed = Verdict.wait("gate-error", f"{type(exc).__name__}: {exc}"[:300], kind="unknown", retry_in=retry)
        return decided("gate-error", failed)
