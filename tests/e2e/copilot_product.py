"""The whole product around the real Copilot CLI: a COPILOT_HOME wired by
``donebell install --service none --copilot`` under a running supervisor, and what a scenario
reads back (the session id, the hooks the CLI ran, the notifications' kinds)."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from support import npm_clis

from e2e.copilot_harness import CopilotHome, make_copilot_home
from e2e.installed import INSTALLED, assert_wired_to_installed
from e2e.notes import JSON
from e2e.product import DONEBELL, Product
from e2e.product_scenarios import _dump_on_failure

#: The ntfy tag of each notification kind (the first tag of a push).
KIND_OF_TAG = {"white_check_mark": "done", "x": "failed", "stop_sign": "stopped", "raising_hand": "needs-you"}


def install_copilot(product: Product, home: CopilotHome) -> str:
    """``donebell install --service none --copilot`` into the harness's COPILOT_HOME, with the
    pinned ``copilot`` on PATH (install and doctor find the agent and name its version there)."""
    product.homes |= {"home": home.home, "copilot": home.copilot_home}
    env = product.env()
    env["PATH"] = f"{npm_clis.copilot_binary().parent}:{env['PATH']}"
    res = subprocess.run(
        [*DONEBELL, "install", "--service", "none", "--copilot"], env=env, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, f"install --copilot failed ({res.returncode}):\n{res.stdout}\n{res.stderr}"
    wired = home.installed_hook_files()
    assert wired, f"install --copilot wrote no hook file into {home.hooks_dir}:\n{res.stdout}"
    if INSTALLED is not None:  # the CLI's hooks call the wheel's script, not the checkout's
        assert_wired_to_installed(wired)
    return res.stdout


@contextlib.contextmanager
def copilot_product(
    tmp: Path,
    server: Any,
    *,
    config: JSON | None = None,
    hooks: Mapping[str, Sequence[str]] | None = None,
    extra_env: dict[str, str] | None = None,
) -> Iterator[tuple[Product, CopilotHome]]:
    """A COPILOT_HOME wired by ``donebell install --copilot`` (plus optional recorder hooks in a
    file of their own), under a running supervisor."""
    with Product(tmp, dict(config or {})) as product:
        home = make_copilot_home(tmp, server, hooks=hooks, extra_env={**product.agent_env(), **(extra_env or {})})
        install_copilot(product, home)
        product.start()
        with _dump_on_failure(product):
            yield product, home


def kinds(messages: Sequence[JSON]) -> list[str]:
    """Each push's kind (done / failed / stopped / needs-you), in arrival order."""
    return [KIND_OF_TAG.get((m.get("tags") or ["?"])[0], "?") for m in messages]


def only_session(home: CopilotHome) -> str:
    """The one session this home ran (``session-state/<id>``)."""
    [session] = home.session_ids()
    return session
