"""One reply's way through the wake role, each step recorded in ``wake/replies/`` before it acts.

``received`` → ``verified`` → (``queued`` while the thread is busy) → ``requested`` →
``confirmed`` | ``refused`` (reason) | ``failed`` (reason) | ``unconfirmed``.

* Verification: the ticket (constant-time HMAC against the key on disk now, expiry; another
  host's ticket is dropped without a record; a hello of another machine is noted: machines.py),
  a tap older than ``wake_tap_max_age_seconds`` on the server's clock is ``stale`` (tell.py), then the nonce is claimed by exclusive create (a second use is ``replay``), the turn
  is claimed likewise (a second button for the same turn is ``already-answered``), the button
  index must still be configured, donebell must have notified that very turn (a sent receipt:
  else ``unknown-thread``), its rollout/transcript must exist (``rollout-missing``), and the newest
  ended turn must still be the ticket's (``superseded``: the user already continued).
* A busy thread (its newest turn has not ended) is waited on, re-checked every pass, for up to
  :data:`BUSY_WAIT_SECONDS`; a wake is never steered into a running turn, and once that turn
  ended the ticket's turn is no longer the newest ended one: ``superseded``.
* ``requested`` is written before the agent is started, with the turn count at that moment.
  The agent's own record of one more turn confirms it. Before that, an attempt whose process
  exited without a new turn (e.g. Codex's "already has an active writer") is retried after 2,
  5 and 15 s. After a restart a ``requested`` record is only ever confirmed, never requested
  again: at most one missed wake, never a second turn. A ``failed`` wake started no turn: its
  ticket and turn are released and the phone is told (tell.py).

Nothing from a reply is executed or put into the prompt: the prompt is the configured one.
"""

from __future__ import annotations

import logging
import subprocess
import threading
from collections.abc import Callable
from typing import Any

from donebell.shared.config.secret_text import scrub, settings_secrets
from donebell.shared.config.view import SettingsLike
from donebell.shared.keys import event_key
from donebell.shared.ntfy.server_clock import tap_age
from donebell.shared.statedir import SENT, StateDir, now
from donebell.shared.statedir._wake import WakeQueue
from donebell.shared.wake_ticket import TicketKey, TicketRefused, key_signature, load_key, verify
from donebell.workers.agents import registry
from donebell.workers.kit.thread_view import DaemonError
from donebell.workers.wake import agents, live_session, tell
from donebell.workers.wake.junk import JunkLimiter
from donebell.workers.wake.machines import HELLO_PREFIX, heard_ticket, hello_heard

BUSY_WAIT_SECONDS = 30 * 60.0
RETRY_DELAYS = (2.0, 5.0, 15.0)
#: How long a started agent has to show its new turn before the wake is ``unconfirmed``.
CONFIRM_SECONDS = 300.0
BODY_KEEP = 512  # characters of a refused reply kept in its record


class WakePipeline:
    def __init__(self, state: StateDir, settings: SettingsLike, log: logging.Logger) -> None:
        self.state, self.settings, self.log = state, settings, log
        self.queue: WakeQueue = state.wake_queue()
        self.key: TicketKey = load_key(state)
        self._key_signature = key_signature(state)
        self.junk = JunkLimiter(log)
        self.counters: dict[str, int] = {}
        self._counters_lock = threading.Lock()  # steps run on the role's worker threads too
        self.start_inline = True  # verified: start now (the continuous role's workers do it instead)
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self.confirm_seconds = CONFIRM_SECONDS
        self.clear_card: Callable[[str], str] | None = None  # set by the role (answers.py)
        self.publish: Callable[[dict[str, Any]], str] | None = None  # set by the role (tell.py)
        self.hello_due = False  # a machine new to us said hello: answer with ours (machines.py)
        self.twins_told: set[str] = set()  # hosts already named in a "same identity" log line

    def current_key(self) -> TicketKey:
        """The key on disk now: `config rotate-wake-key` (or a move) replaces the file under a
        running role, which verifies with the new key from the next tap on."""
        signature = key_signature(self.state)
        if signature != self._key_signature:
            self.key = load_key(self.state)
            self._key_signature = key_signature(self.state)
            self.log.info("wake key changed on disk: taps are verified with the new key (older buttons are refused)")
        return self.key

    def count(self, name: str) -> None:
        with self._counters_lock:
            self.counters[name] = self.counters.get(name, 0) + 1

    def take_counters(self) -> dict[str, int]:  # a pass's share, reset
        with self._counters_lock:
            counters, self.counters = self.counters, {}
        return counters

    # a reply arrives ------------------------------------------------------------------------

    def receive(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Handle one ntfy ``message`` event of the reply topic (bounded work; never raises on
        input). The record it made or found, or None for a reply that gets no record."""
        message_id = message.get("id")
        body = message.get("message")
        if not isinstance(message_id, str) or not message_id.isalnum() or len(message_id) > 64:
            self.junk.refused("malformed", "?")
            return None
        text = body if isinstance(body, str) else ""
        if text.startswith(HELLO_PREFIX):
            hello_heard(self, text)
            return None
        try:
            ticket = verify(self.current_key(), text)
        except TicketRefused as exc:
            if exc.reason == "other-host":
                self.count("other-host")
                if exc.host_id:
                    heard_ticket(self.state, exc.host_id)
                return None  # silently: another host's reply, not ours to judge
            first = exc.nonce is not None and self.queue.claim(f"refused-{exc.nonce}", message_id)
            if not first:  # junk, and repeats of one signed ticket, are counted, not recorded one by one
                self.count(f"refused-{exc.reason}")
                self.junk.refused(exc.reason, message_id)
                return None
            record, new = self.queue.receive(message_id, {"body": text[:BODY_KEEP]})
            if new:
                self._refuse(record, exc.reason)  # counts it
            return record
        existing = self.queue.read(self.queue.key_of(message_id))
        if existing is not None:
            return existing  # seen before (a reconnect's backlog): handled once
        if self.queue.claimed(f"nonce-{ticket.nonce}") and not self.queue.claim(f"replay-{ticket.nonce}", message_id):
            self.count("refused-replay")
            self.junk.refused("replay", message_id)  # the first replay of a ticket is recorded, the rest counted
            return None
        fields = {
            "provider": ticket.provider,
            "conversation_id": ticket.conversation_id,
            "turn_id": ticket.turn_id,
            "action": ticket.action,
            "nonce": ticket.nonce,
            "expires_at": ticket.expires_at,
            "message_time": message.get("time"),
        }
        if ticket.decision is not None:  # Allow / Deny of a permission prompt (answers.py)
            fields.update(request=ticket.request, digest=ticket.digest, decision=ticket.decision)
        age, window = tap_age(message), float(self.settings.wake_tap_max_age_seconds)
        if age is not None and age > window:  # tapped while this machine's service was down
            record, new = self.queue.receive(message_id, {**fields, "tap_age_seconds": round(age)})
            if new:
                tell.stale(self, record, age, window)
            return record
        record, new = self.queue.receive(message_id, fields)
        if new:
            self.count("received")
            self.log.info("wake reply %s received for %s %s", message_id, ticket.provider, ticket.conversation_id[:8])
            self._verify(record)
        return record

    def _verify(self, record: dict[str, Any]) -> None:
        if record.get("decision") is not None:
            from donebell.workers.wake.answers import handle_answer

            handle_answer(self, record)
            return
        provider, conv, turn = record["provider"], record["conversation_id"], record["turn_id"]
        if not self.queue.claim(f"nonce-{record['nonce']}", record["key"]):
            self._refuse(record, "replay")
            return
        actions = self.settings.wake_actions
        if not 0 <= record["action"] < len(actions):
            self._refuse(record, "unknown-action")
            return
        if self.state.read(SENT, event_key(provider, conv, turn)) is None:
            self._refuse(record, "unknown-thread")
            return
        path = agents.locate(provider, conv)
        if path is None:
            self._refuse(record, "rollout-missing")
            return
        try:
            view = agents.read_thread(provider, path)
        except OSError:
            self._refuse(record, "rollout-missing")
            return
        if view.latest_done != turn:
            self._refuse(record, "superseded")
            return
        if not self.queue.claim(f"turn-{provider}-{conv}-{turn}", record["key"]):
            self._refuse(record, "already-answered")
            return
        self.queue.advance(record, "verified", verified_at=now())
        self.count("verified")
        if self.start_inline:
            self.step(record)

    # open records move on, one pass at a time -------------------------------------------

    def step(self, record: dict[str, Any]) -> float | None:
        """Move an open record on as far as it can go now; seconds until it wants another look."""
        status = record.get("status")
        if status == "received":
            self._verify(record)  # a crash after `received`: verify again (claims make it idempotent)
            return 0.0
        if status in ("verified", "queued", "retry"):
            return self._try_start(record)
        if status == "requested":
            return self._check_requested(record)
        return None

    def _view(self, record: dict[str, Any]) -> agents.ThreadView | None:
        path = agents.locate(record["provider"], record["conversation_id"])
        try:
            return agents.read_thread(record["provider"], path) if path else None
        except OSError:
            return None

    def _try_start(self, record: dict[str, Any]) -> float | None:
        at = now()
        if record.get("status") == "retry" and at < float(record.get("next_attempt_at") or 0):
            return float(record["next_attempt_at"]) - at
        view = self._view(record)
        if view is None:
            self._fail(record, "rollout-missing")
            return None
        if view.active:
            since = float(record.get("queued_at") or at)
            if at - since > BUSY_WAIT_SECONDS:
                self._fail(record, "busy-timeout")
                return None
            if record.get("status") != "queued":
                self.queue.advance(record, "queued", queued_at=since)
                self.count("queued")
                self.log.info("wake %s: thread busy, queued until it is idle", record["message_id"])
            return 2.0
        if view.latest_done != record["turn_id"]:
            # A turn ended while the wake waited (the user continued in the terminal): the
            # ticket's turn is no longer the newest ended one, the same rule as at verification.
            self._refuse(record, "superseded")
            return None
        provider = record["provider"]
        if not 0 <= record["action"] < len(self.settings.wake_actions):  # the config changed meanwhile
            self._refuse(record, "unknown-action")
            return None
        prompt = self.settings.wake_actions[record["action"]]["prompt"]
        delivered = live_session.start_in_session(self, record, view, prompt)
        if delivered is not False:  # into the open session (live_session.py)
            return delivered
        agent = registry.agent(provider)
        socket_path = agent.daemon_socket() if agent is not None else None
        if socket_path is not None:
            delay = self._start_through_daemon(record, view, socket_path, prompt)
            if record.get("via") == "app-server":
                return delay
            # the socket was stale (no daemon listening): nothing was asked; exec resume goes now
        own = [str(a) for a in getattr(self.settings, f"wake_{provider}_args", None) or []]
        args = [a for a in view.resume_args if a not in own] + own  # as the user's own run had it
        argv = agents.command(provider, record["conversation_id"], prompt, args)
        if argv is None:
            self._fail(record, f"{provider}-not-on-path")
            return None
        attempt = int(record.get("attempts") or 0) + 1
        log_path = self.queue.spawn_log(record["key"])
        # Recorded before the agent starts: a crash from here on never requests a second turn.
        self.queue.advance(
            record, "requested", attempts=attempt, baseline_turns=view.turns, requested_at=now(), via="exec"
        )
        try:
            self._procs[record["key"]] = agents.spawn(argv, view.cwd, log_path)
        except OSError as exc:
            return self._attempt_failed(record, f"spawn: {exc.strerror or exc}")
        self.count("requested")
        self.log.info("wake %s: turn requested (%s, attempt %d)", record["message_id"], provider, attempt)
        return 0.25

    def _start_through_daemon(
        self, record: dict[str, Any], view: agents.ThreadView, socket_path: str, prompt: str
    ) -> float | None:
        attempt = int(record.get("attempts") or 0) + 1
        self.queue.advance(
            record, "requested", attempts=attempt, baseline_turns=view.turns, requested_at=now(), via="app-server"
        )
        try:
            agent = registry.agent(record["provider"])
            if agent is None:
                raise DaemonError("no agent to ask", unreachable=True)
            turn = agent.start_turn_in_daemon(socket_path, record["conversation_id"], prompt)
        except DaemonError as exc:
            if exc.unreachable:
                self.log.info(
                    "wake %s: app-server socket unreachable (%s); using codex exec resume", record["message_id"], exc
                )
                self.queue.advance(record, "verified", via="exec", attempts=attempt - 1)
                return None
            if exc.accepted:
                self.log.warning("wake %s: %s; waiting for the rollout to confirm", record["message_id"], exc)
                return 0.5
            return self._attempt_failed(record, "busy" if str(exc).startswith("busy") else str(exc)[:200])
        self.queue.advance(record, "requested", accepted_turn=turn)  # accepted: never requested again
        self.count("requested")
        self.log.info("wake %s: turn %s accepted by the app-server daemon", record["message_id"], turn[:8])
        return 0.25

    def _check_requested(self, record: dict[str, Any]) -> float | None:
        view = self._view(record)
        if view is not None and view.turns > int(record.get("baseline_turns") or 0):
            delivery = live_session.confirmed_delivery(record)
            self.queue.advance(record, "confirmed", confirmed_at=now(), new_turn=view.latest_turn, delivery=delivery)
            self.count("confirmed")
            self._procs.pop(record["key"], None)
            self.log.info("wake %s: confirmed, new turn %s", record["message_id"], view.latest_turn)
            return None
        if record.get("via") == "inbox":
            return live_session.unconfirmed_inbox(self, record)
        proc = self._procs.get(record["key"])
        if proc is not None and proc.poll() is not None:
            self._procs.pop(record["key"], None)
            view = self._view(record)  # the turn may have been written just before the exit
            if view is not None and view.turns > int(record.get("baseline_turns") or 0):
                return self._check_requested(record)
            spawn_log = self.queue.spawn_log(record["key"])
            if agents.busy_refusal(spawn_log):
                return self._attempt_failed(record, "busy")
            said = scrub(agents.last_words(spawn_log), *settings_secrets(self.settings))  # the agent's own reason
            return self._attempt_failed(record, f"exit {proc.returncode}" + (f": {said}" if said else ""))
        if now() - float(record.get("requested_at") or 0) > self.confirm_seconds:
            # Accepted or not, it may still run: never a second request for this ticket.
            self.queue.advance(record, "unconfirmed", reason="no new turn seen")
            self.count("unconfirmed")
            return None
        return 0.25 if proc is not None else 2.0

    def _attempt_failed(self, record: dict[str, Any], why: str) -> float | None:
        attempt = int(record.get("attempts") or 1)
        if attempt > len(RETRY_DELAYS):
            self._fail(record, why)
            return None
        delay = RETRY_DELAYS[attempt - 1]
        self.queue.advance(record, "retry", reason=why, next_attempt_at=now() + delay)
        self.log.info("wake %s: attempt %d failed (%s); retry in %gs", record["message_id"], attempt, why, delay)
        return delay

    def refuse(self, record: dict[str, Any], reason: str) -> None:
        """Durably mark ``record`` refused with ``reason`` (counted and logged)."""
        self._refuse(record, reason)

    def _refuse(self, record: dict[str, Any], reason: str) -> None:
        self.queue.advance(record, "refused", reason=reason)
        self.count(f"refused-{reason}")
        self.log.warning("wake reply %s refused: %s", record["message_id"], reason)

    def _fail(self, record: dict[str, Any], reason: str) -> None:
        self.queue.advance(record, "failed", reason=reason)
        self.count("failed")
        told = tell.failed(self, record, reason)
        self.log.warning(
            "wake %s failed: %s (the button may be tapped again; phone: %s)", record["message_id"], reason, told
        )
