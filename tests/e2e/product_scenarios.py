"""Scenario set-ups and look-ups over a `Product`: a Codex or Claude home wired by
`donebell install` under a running supervisor, the Codex hook trust step, and the sent receipts,
log entries and rollout thread ids the scenarios check."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from e2e.harness import ClaudeHome, CodexHome, make_claude_home, make_codex_home
from e2e.notes import JSON
from e2e.product import Product


def trust_codex_stop_hook(home: CodexHome) -> str:
    """Trust donebell's Stop hook in config.toml as a user does with Codex's `/hooks` review
    (`[hooks.state."<key>"] trusted_hash`), hashed by donebell's own trust_hash module; its key."""
    from donebell.workers.agents.codex.trust_hash import donebell_stop_hooks

    [hook] = donebell_stop_hooks(home.codex_home)
    with home.config_toml.open("a") as f:
        f.write(f"\n[hooks.state.{json.dumps(hook.key)}]\ntrusted_hash = {json.dumps(hook.current_hash)}\n")
    [trusted] = donebell_stop_hooks(home.codex_home)
    assert trusted.status == "trusted", trusted
    return str(hook.key)


def sent_receipts(product: Product) -> list[JSON]:
    return [r for r in product.records("sent") if r.get("reason") == "sent"]


def log_entries(product: Product, *, msg_prefix: str = "", **match: Any) -> list[JSON]:
    return [
        e
        for e in product.log()
        if str(e.get("msg", "")).startswith(msg_prefix) and all(e.get(k) == v for k, v in match.items())
    ]


def thread_ids(paths: Iterable[Path]) -> list[str]:
    """Rollout thread ids (session_meta.id) of the given rollouts."""
    out = []
    for p in paths:
        first = p.read_text().split("\n", 1)[0]
        out.append(json.loads(first)["payload"]["id"])
    return out


@contextlib.contextmanager
def _dump_on_failure(product: Product) -> Iterator[None]:
    """On any failure, print the state as it was then (before teardown kills the processes),
    unless the assertion message already carries it."""
    try:
        yield
    except BaseException as exc:
        if "==== donebell state dir" not in str(exc):
            sys.stderr.write(product.diagnostics() + "\n")
        raise


@contextlib.contextmanager
def codex_product(
    tmp: Path, server: Any, *, config: JSON | None = None, extra_env: dict[str, str] | None = None, start: bool = True
) -> Iterator[tuple[Product, CodexHome]]:
    """A Codex home wired by `donebell install --service none --codex`, under a running supervisor."""
    with Product(tmp, dict(config or {})) as product:
        home = make_codex_home(tmp, server, extra_env={**product.agent_env(), **(extra_env or {})})
        product.install(codex=home)
        if start:
            product.start()
        with _dump_on_failure(product):
            yield product, home


@contextlib.contextmanager
def claude_product(
    tmp: Path, server: Any, *, config: JSON | None = None, hooks: Any = None, extra_env: dict[str, str] | None = None
) -> Iterator[tuple[Product, ClaudeHome]]:
    """A Claude config dir wired by `donebell install --service none --claude`, under a running supervisor."""
    with Product(tmp, dict(config or {})) as product:
        home = make_claude_home(tmp, server, hooks=hooks, extra_env={**product.agent_env(), **(extra_env or {})})
        product.install(claude=home)
        product.start()
        with _dump_on_failure(product):
            yield product, home
