"""``donebell worker wake [--once] [--debug]``: the role that honours replies to Continue buttons.

Spawned by the supervisor only when ``wake_enabled`` (listed ``disabled`` otherwise), with its
own lock and health file like every role. A continuous run keeps one subscription to the reply
topic (:mod:`donebell.shared.ntfy.subscribe`, in a thread that only reads the network), verifies
each reply and answers each tap on Allow / Deny on the main thread, and moves replies to continue
on through :mod:`.pipeline` on worker threads (:mod:`.open_replies`): a slow agent command never
holds back a tap nor the heartbeat. ``--once`` polls the topic's cache instead, handles what is
there and moves every open record one step, inline. The id of the last message handled is
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
from typing import TYPE_CHECKING, Any, ClassVar

from donebell.shared.config.secret_text import public_url
from donebell.shared.ntfy.client import ConfigProblem, account_auth, check_sendable
from donebell.shared.ntfy.server_clock import ServerClock
from donebell.shared.ntfy.subscribe import Subscriber, clear_card, poll, post_text, publish_json, topic_url
from donebell.workers.kit.labels import origin_label
from donebell.workers.kit.pass_result import PassResult
from donebell.workers.role import EXIT_CONFIG, Role
from donebell.workers.wake.machines import hello_body, other_machines
from donebell.workers.wake.open_replies import OpenReplies
from donebell.workers.wake.pipeline import WakePipeline
from donebell.workers.wake.policy import config_problem

if TYPE_CHECKING:
    from donebell.shared.states import SubscriptionState

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
        self.pipeline.start_inline = self.bounded()  # continuous: turns start on the workers
        self.queue = self.pipeline.queue
        self.headers = {"Authorization": auth.header} if auth else {}
        self.url = topic_url(public_url(self.settings.server), self.settings.wake_topic)
        self.pipeline.clear_card = self._clear_card
        self.pipeline.publish = self._publish
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=256)
        self.open = OpenReplies(self.pipeline, self.log, inline=self.bounded(), on_done=self._wake_pass)
        for record in self.queue.open_records():
            self.open.add(record)
        self.subscription_state: SubscriptionState = "polling" if self.bounded() else "connecting"
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

    def _on_state(self, state: SubscriptionState) -> None:
        if state == "subscribed" and self.subscription_state != "subscribed":
            self.pipeline.hello_due = True  # (re)connected: say hello to the machines sharing the topic
        self.subscription_state = state

    def _wake_pass(self) -> None:
        """A worker finished a step: the pass waiting on the inbox looks at it now."""
        try:
            self.inbox.put_nowait(None)
        except queue.Full:
            pass  # a full inbox does not block get()

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
        self.open.collect()
        self.open.dispatch()
        due = self.open.next_due()
        if self.bounded():
            messages = poll(self.url, self.headers, self.queue.cursor(), self.settings.timeout_seconds, self.clock)
        else:
            messages = self._take(min(PASS_WAIT, due) if due is not None else PASS_WAIT)
        last_id = None
        for message in messages:
            record = self.pipeline.receive(message)  # a tap on Allow / Deny is answered here, at once
            if record is not None:
                self.open.add(record)
            if isinstance(message.get("id"), str):
                last_id = message["id"]
        if last_id is not None:
            self.queue.set_cursor(last_id)
        self.open.collect()
        self.open.dispatch()
        self.open.collect()  # inline (--once): the steps just made
        return PassResult(
            next_in=0.0 if not self.bounded() else self.open.next_due(),
            idle=not self.open,
            counters=self.pipeline.take_counters(),
        )

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

    def health_extra(self) -> dict[str, Any]:
        sub = self.subscriber
        offset = self.clock.offset()
        return {
            "subscription": self.subscription_state,
            "server_clock_offset_seconds": round(offset, 1) if offset is not None else None,
            "other_machines": other_machines(self.state),
            "open_wakes": len(self.open),
            "steps_running": len(self.open.running),
            "connects": sub.connects if sub else 0,
            "junk_refused": self.pipeline.junk.total,
        }

    def teardown(self) -> None:
        if getattr(self, "subscriber", None) is not None:
            assert self.subscriber is not None
            self.subscriber.stopping.set()
        if getattr(self, "open", None) is not None:
            self.open.close()
