"""``donebell worker wake [--once] [--debug]``: the role that honours replies to Continue buttons.

Spawned by the supervisor only when ``wake_enabled`` (listed ``disabled`` otherwise), with its
own lock and health file like every role. A continuous run keeps one subscription to the reply
topic (:mod:`.subscription`, in a thread that only reads the network) and moves each reply
through :mod:`.pipeline` on the main thread; ``--once`` polls the topic's cache instead, handles
what is there and moves every open record one step. The id of the last message handled is
persisted (``wake/cursor.json``), so replies that arrived while the role was down are handled
once on restart.

It refuses to run on a server without an access token (anyone could then read the topics and
use a ticket first) unless ``wake_allow_unauthenticated: true`` says the user accepts that, and,
like delivery, to send its credentials in clear text to another host or through a clear-text proxy.
"""

from __future__ import annotations

import queue
import signal
import sys
from typing import Any, ClassVar

from donebell.shared.config.secret_text import public_url
from donebell.shared.ntfy.client import ConfigProblem, account_auth, check_sendable
from donebell.shared.ntfy.server_clock import ServerClock
from donebell.shared.ntfy.subscribe import Subscriber, clear_card, poll, post_text, publish_json, topic_url
from donebell.workers.kit.labels import origin_label
from donebell.workers.kit.pass_result import PassResult
from donebell.workers.role import EXIT_CONFIG, Role
from donebell.workers.wake.machines import hello_body, other_machines
from donebell.workers.wake.pipeline import WakePipeline
from donebell.workers.wake.policy import config_problem

PASS_WAIT = 9.0  # longest block of one pass on the inbox: health is written per pass, stale after 30 s
BATCH_MAX = 200  # messages handled per pass before open records get their turn


class WakeRole(Role):
    name: ClassVar[str] = "wake"
    heartbeat_seconds: ClassVar[float] = 10.0
    waits_in_pass: ClassVar[bool] = True  # a pass waits on the subscription: `ready`, not `scanning`

    def setup(self) -> None:
        problem = config_problem(self.settings)
        auth = None
        try:
            auth = account_auth(self.settings)  # the URL's user-info too, as delivery sends with it
            check_sendable(self.settings, auth)  # the same clear-text rules as delivery
        except ConfigProblem as exc:
            problem = problem or str(exc)
        if problem:
            self.log.error("wake role not started: %s", problem)
            sys.stderr.write(f"donebell worker wake: {problem}\n")
            sys.exit(EXIT_CONFIG)
        self.pipeline = WakePipeline(self.state, self.settings, self.log)
        self.queue = self.pipeline.queue
        self.open: dict[str, dict[str, Any]] = {r["key"]: r for r in self.queue.open_records()}
        self.headers = {"Authorization": auth.header} if auth else {}
        self.url = topic_url(public_url(self.settings.server), self.settings.wake_topic)
        self.pipeline.clear_card = self._clear_card
        self.pipeline.publish = self._publish
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=256)
        self.subscription_state = "polling" if self.bounded() else "connecting"
        self.subscriber: Subscriber | None = None
        self.clock = ServerClock()
        if not self.bounded():
            self.subscriber = Subscriber(
                self.url,
                self.headers,
                self.queue.cursor(),
                self.inbox,
                self.log,
                on_state=self._on_state,
                clock=self.clock,
            )
            self._wake_inbox_on_stop()
            self.subscriber.start()

    def _on_state(self, state: str) -> None:
        if state == "subscribed" and self.subscription_state != "subscribed":
            self.pipeline.hello_due = True  # (re)connected: say hello to the machines sharing the topic
        self.subscription_state = state

    def _wake_inbox_on_stop(self) -> None:
        """SIGTERM/SIGINT also unblock a pass waiting on the inbox (the role's own handler runs first)."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(sig)

            def handler(signum: int, frame: Any, previous: Any = previous) -> None:
                if callable(previous):
                    previous(signum, frame)
                try:
                    self.inbox.put_nowait(None)
                except queue.Full:
                    pass  # a full inbox does not block get()

            signal.signal(sig, handler)

    def _publish(self, payload: dict[str, Any]) -> str:
        """Publish a notice to the notification topic with delivery's account (tell.py)."""
        return publish_json(public_url(self.settings.server), payload, self.headers, self.settings.timeout_seconds)

    def _say_hello(self) -> None:
        """This machine's hello on the reply topic (machines.py), once per connection or new machine."""
        self.pipeline.hello_due = False
        body = hello_body(self.pipeline.current_key().host_id, origin_label({}, self.settings))
        outcome = post_text(self.url.removesuffix("/json"), body, self.headers, self.settings.timeout_seconds)
        if outcome != "sent":
            self.log.info("wake hello not sent: %s", outcome)

    def _clear_card(self, sequence_id: str) -> str:
        """Dismiss a push of the notification topic, with the account delivery sends with."""
        server, topic = public_url(self.settings.server), self.settings.topic
        return clear_card(server, topic, sequence_id, self.headers, self.settings.timeout_seconds)

    def run_pass(self) -> PassResult:
        if self.pipeline.hello_due and not self.bounded():
            self._say_hello()
        due = self._step_open()
        if self.bounded():
            messages = poll(self.url, self.headers, self.queue.cursor(), self.settings.timeout_seconds, self.clock)
        else:
            messages = self._take(min(PASS_WAIT, due) if due is not None else PASS_WAIT)
        last_id = None
        for message in messages:
            record = self.pipeline.receive(message)
            if record is not None and record.get("status") not in ("confirmed", "refused", "failed", "unconfirmed"):
                self.open[record["key"]] = record
            if isinstance(message.get("id"), str):
                last_id = message["id"]
        if last_id is not None:
            self.queue.set_cursor(last_id)
        due = self._step_open() if messages else due
        counters, self.pipeline.counters = self.pipeline.counters, {}
        return PassResult(next_in=0.0 if not self.bounded() else due, idle=not self.open, counters=counters)

    def _take(self, wait: float) -> list[dict[str, Any]]:
        try:
            first = self.inbox.get(timeout=max(0.0, wait))
        except queue.Empty:
            return []
        batch = [] if first is None else [first]
        while len(batch) < BATCH_MAX:
            try:
                more = self.inbox.get_nowait()
            except queue.Empty:
                break
            if more is not None:
                batch.append(more)
        return batch

    def _step_open(self) -> float | None:
        """Move every open record on; the shortest delay any of them asked for."""
        due: float | None = None
        for key, record in list(self.open.items()):
            try:
                delay = self.pipeline.step(record)
            except Exception as exc:  # noqa: BLE001 - one bad record must not stop the others
                self.log.error("wake %s: step failed: %s: %s", record.get("message_id"), type(exc).__name__, exc)
                delay = 5.0
            if record.get("status") in ("confirmed", "refused", "failed", "unconfirmed"):
                del self.open[key]
            elif delay is not None:
                due = delay if due is None else min(due, delay)
        return due

    def health_extra(self) -> dict[str, Any]:
        sub = self.subscriber
        offset = self.clock.offset()
        return {
            "subscription": self.subscription_state,
            "server_clock_offset_seconds": round(offset, 1) if offset is not None else None,
            "other_machines": other_machines(self.state),
            "open_wakes": len(self.open),
            "connects": sub.connects if sub else 0,
            "junk_refused": self.pipeline.junk.total,
        }

    def teardown(self) -> None:
        if getattr(self, "subscriber", None) is not None:
            assert self.subscriber is not None
            self.subscriber.stopping.set()
