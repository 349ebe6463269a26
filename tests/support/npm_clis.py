"""Pinned real `codex` and `claude` CLIs from npm, installed once per machine into a cache folder.

Two agent sets are pinned in ``agent_pins.json``: ``pinned`` (the baseline the suite was built
on) and ``newest`` (the releases users install today; ``update_newest_pins.py`` moves them).
``DONEBELL_E2E_AGENTS=pinned|newest`` chooses one (default ``pinned``). Each set has its own npm
prefix: ``~/.cache/donebell-e2e/npm`` for ``pinned``, ``~/.cache/donebell-e2e/npm-newest`` for
``newest`` (env ``DONEBELL_E2E_NPM_CACHE`` replaces the first; the newest set then uses it with
``-newest`` appended). An fcntl lock serialises concurrent pytest processes, and a marker file
records the installed versions so later runs only check that the binaries answer ``--version``.

We return the NATIVE binaries, not the npm bin wrappers: the Codex wrapper is a Node script that,
on Node 20, spawns the binary as a child, so SIGINT/SIGKILL to it would not reach Codex itself.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
from functools import cache
from pathlib import Path

PINS_FILE = Path(__file__).resolve().with_name("agent_pins.json")
AGENT_SETS = ("pinned", "newest")
CODEX_PACKAGE = "@openai/codex"
CLAUDE_PACKAGE = "@anthropic-ai/claude-code"


def agent_set() -> str:
    """The agent set this run tests (``DONEBELL_E2E_AGENTS``); a typo is an error, never a fallback."""
    chosen = os.environ.get("DONEBELL_E2E_AGENTS", "").strip() or "pinned"
    if chosen not in AGENT_SETS:
        raise ValueError(f"DONEBELL_E2E_AGENTS must be one of {', '.join(AGENT_SETS)}, not {chosen!r}")
    return chosen


def pins() -> dict[str, dict[str, str]]:
    data: dict[str, dict[str, str]] = json.loads(PINS_FILE.read_text())
    return data


PACKAGES = pins()[agent_set()]
CODEX_VERSION = PACKAGES[CODEX_PACKAGE]
CLAUDE_VERSION = PACKAGES[CLAUDE_PACKAGE]


def claude_version() -> tuple[int, ...]:
    """The Claude Code version under test, for the few scenarios whose expectations depend on it."""
    return tuple(int(part) for part in CLAUDE_VERSION.split("."))


_CODEX_REL = "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
_CLAUDE_REL = "node_modules/@anthropic-ai/claude-code-linux-x64/claude"
_MARKER = "donebell-e2e-installed.json"


class NpmInstallError(RuntimeError):
    """npm exists but the pinned CLIs could not be installed or do not run."""


def cache_dir() -> Path:
    override = os.environ.get("DONEBELL_E2E_NPM_CACHE")
    base = Path(override).expanduser() if override else Path.home() / ".cache" / "donebell-e2e" / "npm"
    return base if agent_set() == "pinned" else base.with_name(f"{base.name}-{agent_set()}")


def skip_reason() -> str | None:
    """Why the e2e tests cannot run here (only when `npm` itself is missing), else None."""
    if shutil.which("npm") is None:
        return "npm is not installed: the e2e tests need it to install the pinned codex and claude CLIs"
    return None


def codex_binary() -> Path:
    """Absolute path of the native Codex binary (musl, static), installing on first use."""
    return ensure_installed() / _CODEX_REL


def claude_binary() -> Path:
    """Absolute path of the Claude Code ELF (Bun-compiled), installing on first use."""
    return ensure_installed() / _CLAUDE_REL


@cache
def ensure_installed() -> Path:
    """Install the pinned packages if the marker is missing or stale; return the npm prefix.

    Cached per process; the file lock makes a second pytest process wait for the first one's
    install instead of racing npm into the same node_modules.
    """
    prefix = cache_dir().resolve()
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = prefix / _MARKER
        if _marker_matches(marker) and _binaries_answer(prefix):
            return prefix
        _npm_install(prefix)
        if not _binaries_answer(prefix):
            raise NpmInstallError(f"installed into {prefix} but `--version` does not report the pinned versions")
        tmp = marker.with_suffix(".tmp")
        tmp.write_text(json.dumps({"packages": PACKAGES, "installed_at": time.time()}))
        os.replace(tmp, marker)  # the marker appears only once the install is known to work
    return prefix


def _marker_matches(marker: Path) -> bool:
    try:
        return bool(json.loads(marker.read_text()).get("packages") == PACKAGES)
    except (OSError, ValueError, AttributeError):
        return False


def _npm_install(prefix: Path) -> None:
    if skip_reason() is not None:
        raise NpmInstallError("npm is missing")
    specs = [f"{name}@{version}" for name, version in PACKAGES.items()]
    # The platform binaries come as optional dependencies, so they must not be omitted. Claude's
    # postinstall is blocked by npm's allowScripts, but its binary is already in the tarball.
    cmd = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--include=optional", *specs]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise NpmInstallError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")


def _binaries_answer(prefix: Path) -> bool:
    expected = {prefix / _CODEX_REL: CODEX_VERSION, prefix / _CLAUDE_REL: CLAUDE_VERSION}
    for binary, version in expected.items():
        if not os.access(binary, os.X_OK):
            return False
        try:
            out = subprocess.run(
                [str(binary), "--version"],
                check=False,
                capture_output=True,
                text=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
                env={"PATH": os.defpath, "HOME": str(prefix)},
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            return False
        if version not in out:
            return False
    return True
