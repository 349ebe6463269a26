"""``donebell test``: send one test notification through the real outbox path and say what happened.

The test record goes into ``outbox/`` like any promoted event (``test: true``), then:

* no delivery worker running: this command takes the delivery lock and attempts the record itself
  with the delivery role's own code (same payload, client, retry table and receipts);
* a worker is running: it is woken by the new outbox file; this command waits for the outcome.

Its receipt is ``sent/<key>.json`` with ``test: true`` and reason ``test``. Exit 0 when the server
accepted it, 1 when it did not (the answer is printed), 78 for a configuration problem.

A test is a question asked now (``workers/delivery/test_records.py``): it replaces every
older test still queued, and one not sent within ``--expire-after`` seconds (300) expires with a
``suppressed/`` receipt, so at most one test notification ever arrives.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from collections.abc import Callable
from typing import Any

from donebell.shared.config.model import ConfigError, Settings, load, subscribe_url
from donebell.shared.keys import sequence_id
from donebell.shared.ntfy.client import ConfigProblem, auth_for, check_sendable, public_server
from donebell.shared.records import TEST_EXPIRY_SECONDS, base, expiry_of_test
from donebell.shared.statedir import DEAD, OUTBOX, SENT, SUPPRESSED, InvalidRecord, StateDir, now, open_state_dir
from donebell.shared.text.subscribe_qr import qr_text
from donebell.workers.role import EXIT_CONFIG, role_class

PROVIDER = "test"
POLL_SECONDS = 0.05


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="donebell test", description="send one test notification via the outbox")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    parser.add_argument("--wait", type=float, default=30.0, help="seconds to wait for a running worker (30)")
    parser.add_argument(
        "--expire-after",
        type=float,
        default=TEST_EXPIRY_SECONDS,
        metavar="SECONDS",
        help=f"drop the test if it is not sent within this many seconds ({TEST_EXPIRY_SECONDS:.0f})",
    )
    args = parser.parse_args(argv)
    try:
        settings = load().settings
        check_sendable(settings, auth_for(settings))
    except (ConfigError, ConfigProblem) as exc:
        return _report(args, {"ok": False, "state": "config-error", "error": str(exc)}, EXIT_CONFIG)
    if not 0 < args.expire_after <= 86400:
        parser.error("--expire-after must be more than 0 and at most 86400 seconds")
    state = open_state_dir()
    record = test_record(args.expire_after)
    older = queued_tests(state)
    state.create(OUTBOX, record)
    outcome = send_or_wait(state, settings, record["key"], args.wait)
    outcome["replaced"] = len(older)
    outcome["server"] = public_server(settings.server)
    from donebell.supervisor.commands.sendtest_access import explain_refusal

    explain_refusal(settings, outcome)  # a 401/403 or a server that is not ntfy: which key, which line
    if outcome["ok"]:
        outcome["subscribe"] = subscribe_url(settings)
    return _report(args, outcome, 0 if outcome["ok"] else 1)


def queued_tests(state: StateDir) -> list[str]:
    """The keys of the test records still in ``outbox/`` (the new test replaces them)."""
    found = []
    for key in state.keys(OUTBOX):
        try:
            if (state.read(OUTBOX, key) or {}).get("test") is True:
                found.append(key)
        except (InvalidRecord, OSError):
            continue
    return found


def test_record(expire_after: float = TEST_EXPIRY_SECONDS) -> dict[str, Any]:
    """A fresh outbox record marked ``test: true`` (random key: every test is a new notification)."""
    key = secrets.token_hex(32)
    record = base("outbox", key, PROVIDER)
    record.update(
        expires_at=record["created_at"] + expire_after,
        source="donebell-test",
        sources=["donebell-test"],
        weak_identity=True,
        test=True,
        outcome="done",
        revision=1,
        updated_at=record["created_at"],
        promoted_at=record["created_at"],
        verdict="test",
        sequence_id=sequence_id(PROVIDER, key),
        attempts=0,
        next_attempt_at=None,
        last_error=None,
    )
    return record


def send_or_wait(state: StateDir, settings: Settings, key: str, wait: float) -> dict[str, Any]:
    """Deliver the record ourselves whenever no worker holds the lock, else wait for the worker.

    The lock is tried again while waiting: a bounded worker may exit just before it sees the
    record, and then this command finishes the job instead of waiting for nobody.
    """
    deadline = time.monotonic() + wait
    while True:
        lock = state.role_lock("delivery")
        if lock is not None:
            try:
                current = state.read(OUTBOX, key) if state.locate(key) == OUTBOX else None
                if current is not None and not current.get("attempts"):
                    _deliver_here(state, settings, key)
                    return describe(state, key, via="this command")
            finally:
                lock.release()
            return describe(state, key, via="the delivery worker")
        where = state.locate(key)
        if where in (SENT, DEAD):
            break
        if where == OUTBOX and (state.read(OUTBOX, key) or {}).get("attempts"):
            break  # the worker tried and will retry: report its first answer now
        if time.monotonic() >= deadline:
            break
        time.sleep(POLL_SECONDS)
    return describe(state, key, via="the running delivery worker")


def _deliver_here(state: StateDir, settings: Settings, key: str) -> None:
    """Attempt the record with the delivery role's own code (this process holds the role lock)."""
    role = role_class("delivery")(state, settings, argparse.Namespace(once=True, until_idle=False, debug=False))
    try:
        role.setup()
        deliver_one: Callable[[str], object] = getattr(role, "deliver_one")  # noqa: B009 - the delivery role's own entry
        deliver_one(key)
    finally:
        role.teardown()


def describe(state: StateDir, key: str, *, via: str) -> dict[str, Any]:
    """The outcome as far as the state directory knows it."""
    where = state.locate(key)
    out: dict[str, Any] = {"key": key, "state": where or "missing", "via": via}
    if where == SENT:
        receipt = state.read(SENT, key) or {}
        out.update(
            ok=True,
            http_status=receipt.get("http_status"),
            message_id=receipt.get("message_id"),
            sequence_id=receipt.get("sequence_id"),
        )
    elif where == DEAD:
        receipt = state.read(DEAD, key) or {}
        out.update(
            ok=False,
            http_status=receipt.get("http_status"),
            ntfy_code=receipt.get("ntfy_code"),
            error=receipt.get("last_error"),
            reason=receipt.get("reason"),
        )
    elif where == OUTBOX:
        record = state.read(OUTBOX, key) or {}
        out.update(
            ok=False,
            error=record.get("last_error") or "no answer yet",
            attempts=record.get("attempts"),
            http_status=record.get("last_http_status"),
            next_attempt_at=record.get("next_attempt_at"),
            expires_at=expiry_of_test(record),
        )
    elif where == SUPPRESSED:  # expired, or a newer test replaced it, while this command waited
        receipt = state.read(SUPPRESSED, key) or {}
        out.update(ok=False, reason=receipt.get("reason"), error=receipt.get("detail"))
    else:
        out.update(ok=False, error="the test record disappeared")
    return out


def _queued_note(outcome: dict[str, Any]) -> str:
    """What becomes of a test left in the outbox: retried until it expires, or replaced."""
    until = outcome.get("expires_at")
    end = f" until {time.strftime('%H:%M:%S', time.localtime(until))}" if isinstance(until, (int, float)) else ""
    return (
        f"the test notification stays queued; the delivery worker retries it{end}, then it expires"
        " (a newer `donebell test` replaces it: at most one test arrives)\n"
    )


def _report(args: argparse.Namespace, outcome: dict[str, Any], code: int) -> int:
    if outcome.get("replaced") and not args.json:
        sys.stdout.write(f"replaced {outcome['replaced']} older test notification(s) still queued\n")
    if args.json:
        sys.stdout.write(json.dumps(outcome, ensure_ascii=False) + "\n")
        return code
    if outcome.get("state") == "config-error":
        sys.stderr.write(f"donebell test: cannot send: {outcome['error']}\n")
    elif outcome["ok"]:
        sys.stdout.write(
            f"sent: {outcome['server']} answered HTTP {outcome.get('http_status')}"
            f" (message id {outcome.get('message_id')}, via {outcome['via']})\n"
            f"subscribe to {outcome['subscribe']} to receive it\n"
        )
        if sys.stdout.isatty():  # a pipe or a file gets the text only, as `config show` does
            sys.stdout.write(qr_text(str(outcome["subscribe"])) + "\n")
    elif outcome.get("fix"):
        sys.stdout.write(f"not delivered: {outcome['access']}\nfix: {outcome['fix']}\n")
        if outcome["state"] == OUTBOX:
            sys.stdout.write(_queued_note(outcome))
    elif outcome["state"] == OUTBOX:
        wait = outcome.get("next_attempt_at")
        when = f" (next try in {max(0, round(wait - now()))} s)" if isinstance(wait, (int, float)) else ""
        sys.stdout.write(f"not delivered yet: {outcome['error']}{when}\n{_queued_note(outcome)}")
    else:
        sys.stdout.write(f"not delivered ({outcome.get('reason', outcome['state'])}): {outcome.get('error')}\n")
    return code
