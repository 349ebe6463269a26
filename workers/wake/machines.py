"""Several machines on one reply topic: who else is there, and whether a tap is still fresh.

Many users run donebell on a laptop and a server with one phone subscription: both publish to one
notification topic and listen on one reply topic. Each wake role says **hello** on the reply topic
when its subscription opens (and answers a hello of a machine it did not know with its own, once),
a plain message ``dbh1 {"h": host id, "m": machine-id digest, "n": host name, "o": origin}``
that carries no authority (it is not a ticket) and reveals nothing the notification does not
already show. What it hears is kept in ``wake/peers.json`` (``shared/statedir/_wake.py``): the
delivery role then puts the host first in the title (``laptop: project``), ``status`` lists the
machines, and ``doctor`` warns when another machine has this one's ``origin``, host name or host
id (a clone made before it could notice, or a copied config).

A tap's age is judged on the server's clock, never this machine's: the time ntfy stamped the tap
against the server's "now" as this subscription last heard it (the ``open`` and ``keepalive``
events carry it; a poll's ``Date`` header). A tap older than ``wake_tap_max_age_seconds`` (600 s
by default) is refused ``stale``: it was made while this machine's service was down, and a turn
starting hours later, unasked, is worse than none.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from donebell.shared import machine
from donebell.shared.statedir import StateDir
from donebell.shared.statedir._wake import note_peer, read_peers

if TYPE_CHECKING:
    from donebell.workers.wake.pipeline_like import WakePipeline

HELLO_PREFIX = "dbh1 "
HELLO_MAX_CHARS = 600


#: Set by the subscription on each message: the server's clock when the message was read.
def hello_body(host_id: str, origin: str) -> str:
    """This machine's hello on the reply topic."""
    facts = {"h": host_id, "m": machine.machine_id_digest(), "n": machine.host_name(), "o": origin}
    return HELLO_PREFIX + json.dumps(facts, separators=(",", ":"))


def parse_hello(text: str) -> dict[str, Any] | None:
    """The facts of a hello, or None when ``text`` is not one (bounded: a long body is not parsed)."""
    if not text.startswith(HELLO_PREFIX) or len(text) > HELLO_MAX_CHARS:
        return None
    try:
        facts = json.loads(text[len(HELLO_PREFIX) :])
    except ValueError:
        return None
    if not isinstance(facts, dict) or not isinstance(facts.get("h"), str) or not facts["h"]:
        return None
    return {
        "host_id": facts["h"][:64],
        "machine_id": facts.get("m") if isinstance(facts.get("m"), str) else None,
        "host": str(facts.get("n") or "")[:128] or None,
        "origin": str(facts.get("o") or "")[:128] or None,
    }


def heard_hello(state: StateDir, own_host_id: str, facts: dict[str, Any]) -> str:
    """Note a hello: ``"own"`` (this machine's echo), ``"twin"`` (another machine with this host id:
    a copy of this state directory that has not noticed yet), ``"new"`` (worth answering) or ``"known"``."""
    here = machine.current()
    if facts["host_id"] == own_host_id:
        same = facts.get("host") == here["host"] and facts.get("machine_id") == here["machine_id"]
        if same:
            return "own"
        note_peer(state, own_host_id, {**_peer_facts(facts), "twin": True})
        return "twin"
    return "new" if note_peer(state, facts["host_id"], _peer_facts(facts)) else "known"


def heard_ticket(state: StateDir, host_id: str) -> None:
    """Another host's ticket on the reply topic: that machine exists (its name comes with its hello)."""
    note_peer(state, host_id[:64], {"via": "ticket"})


def other_machines(state: StateDir) -> list[dict[str, Any]]:
    """The machines heard on the reply topic (for the health file, ``status`` and ``doctor``)."""
    return [
        {"host_id": host_id[:12], **{k: peer.get(k) for k in ("host", "origin", "seen_at", "via", "twin") if k in peer}}
        for host_id, peer in sorted(read_peers(state).items(), key=lambda kv: str(kv[1].get("host") or kv[0]))
    ]


def _peer_facts(facts: dict[str, Any]) -> dict[str, Any]:
    return {
        "host": facts.get("host"),
        "origin": facts.get("origin"),
        "machine_id": facts.get("machine_id"),
        "via": "hello",
    }


def hello_heard(pipe: WakePipeline, text: str) -> None:
    """A hello on the reply topic: note the machine; answer a new one; say it loudly when another
    machine has this one's identity."""
    facts = parse_hello(text)
    if facts is None:
        pipe.junk.refused("malformed", "hello")
        return
    heard = heard_hello(pipe.state, pipe.current_key().host_id, facts)
    pipe.count(f"hello-{heard}")
    if heard == "new":
        pipe.hello_due = True
    elif heard == "twin" and str(facts.get("host")) not in pipe.twins_told:
        pipe.twins_told.add(str(facts.get("host")))
        pipe.log.error(
            "another machine (%s) uses this state directory's wake identity: a copy made before it could "
            "notice; a tap may run on both until that machine's donebell starts (it then takes a new one)",
            facts.get("host"),
        )
