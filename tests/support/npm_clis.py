"""Pinned real `codex` and `claude` CLIs from npm, installed once per machine into a cache folder.

Two agent sets are pinned in ``agent_pins.json``: ``pinned`` (the baseline the suite was built
on) and ``newest`` (the releases users install today; ``update_newest_pins.py`` moves them).
``DONEBELL_E2E_AGENTS=pinned|newest`` chooses one (default ``pinned``). Each set has its own npm
prefix: ``~/.cache/donebell-e2e/npm`` for ``pinned``, ``~/.cache/donebell-e2e/npm-newest`` for
``newest`` (env ``DONEBELL_E2E_NPM_CACHE`` replaces the first; the newest set then uses it with
``-newest`` appended). An fcntl lock serialises concurrent pytest processes, and a marker file
records the installed versions so later runs only check that the binaries answer ``--version``.

We return the NATIVE binaries, not the npm bin wrappers: the Codex wrapper is a Node script that,
on Node 20, spawns the binary as a child, so SIGINT/SIGKILL to it would not reach Codex itself
(Copilot's `npm-loader.js` likewise `spawnSync`s `@github/copilot-linux-x64/copilot`).

Copilot has a prefix of its own (``npm-copilot`` / ``npm-newest-copilot`` beside the first), so
adding it never changes the Codex/Claude marker and never reinstalls what other runs are using.
Its native binary unpacks a ~150 MB package on first run into ``$COPILOT_PKG_CACHE_HOME/pkg``; the
install unpacks it once into ``copilot_pkg_cache()``, and every run points there (a private HOME
per test would otherwise unpack it again, ~1 s and 150 MB each).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

PINS_FILE = Path(__file__).resolve().with_name("agent_pins.json")
AGENT_SETS = ("pinned", "newest")
CODEX_PACKAGE = "@openai/codex"
CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
COPILOT_PACKAGE = "@github/copilot"
#: Which agent each pinned npm package is (the doctor's tested-release table is keyed by agent).
AGENT_OF_PACKAGE = {CODEX_PACKAGE: "codex", CLAUDE_PACKAGE: "claude", COPILOT_PACKAGE: "copilot"}


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
COPILOT_VERSION = PACKAGES[COPILOT_PACKAGE]
#: What the shared prefix holds (its marker names exactly these, as before Copilot was added).
_CORE_PACKAGES = {CODEX_PACKAGE: CODEX_VERSION, CLAUDE_PACKAGE: CLAUDE_VERSION}
_COPILOT_PACKAGES = {COPILOT_PACKAGE: COPILOT_VERSION}


def claude_version() -> tuple[int, ...]:
    """The Claude Code version under test, for the few scenarios whose expectations depend on it."""
    return tuple(int(part) for part in CLAUDE_VERSION.split("."))


_CODEX_REL = "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
_CLAUDE_REL = "node_modules/@anthropic-ai/claude-code-linux-x64/claude"
_COPILOT_REL = "node_modules/@github/copilot-linux-x64/copilot"
_MARKER = "donebell-e2e-installed.json"


class NpmInstallError(RuntimeError):
    """npm exists but the pinned CLIs could not be installed or do not run."""


def cache_dir() -> Path:
    override = os.environ.get("DONEBELL_E2E_NPM_CACHE")
    base = Path(override).expanduser() if override else Path.home() / ".cache" / "donebell-e2e" / "npm"
    return base if agent_set() == "pinned" else base.with_name(f"{base.name}-{agent_set()}")


def copilot_prefix() -> Path:
    base = cache_dir()
    return base.with_name(f"{base.name}-copilot")


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


def copilot_binary() -> Path:
    """Absolute path of Copilot's native binary (the npm wrapper only spawnSyncs it)."""
    return ensure_copilot() / _COPILOT_REL


def copilot_pkg_cache() -> Path:
    """``COPILOT_PKG_CACHE_HOME`` for every run: the package the binary unpacks, unpacked once."""
    return ensure_copilot() / "pkg-cache"


@cache
def ensure_installed() -> Path:
    """Install the pinned Codex and Claude if the marker is missing or stale; return the npm prefix.

    Cached per process; the file lock makes a second pytest process wait for the first one's
    install instead of racing npm into the same node_modules.
    """
    expected = {_CODEX_REL: CODEX_VERSION, _CLAUDE_REL: CLAUDE_VERSION}
    return _ensure(cache_dir(), _CORE_PACKAGES, expected)


@cache
def ensure_copilot() -> Path:
    """Install the pinned Copilot into its own prefix and unpack its package; return the prefix."""
    return _ensure(copilot_prefix(), _COPILOT_PACKAGES, {_COPILOT_REL: COPILOT_VERSION}, _unpack_copilot)


def _ensure(
    prefix: Path, packages: dict[str, str], expected: dict[str, str], finish: Callable[[Path], None] | None = None
) -> Path:
    prefix = prefix.resolve()
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        marker = prefix / _MARKER
        if _marker_matches(marker, packages) and _binaries_answer(prefix, expected):
            return prefix
        _npm_install(prefix, packages)
        if not _binaries_answer(prefix, expected):
            raise NpmInstallError(f"installed into {prefix} but `--version` does not report the pinned versions")
        if finish is not None:
            finish(prefix)
        tmp = marker.with_suffix(".tmp")
        tmp.write_text(json.dumps({"packages": packages, "installed_at": time.time()}))
        os.replace(tmp, marker)  # the marker appears only once the install is known to work
    return prefix


def _unpack_copilot(prefix: Path) -> None:
    """Let the binary unpack its package into the shared cache now (what its first run would do)."""
    cache_home = prefix / "pkg-cache"
    env = {"PATH": os.defpath, "HOME": str(prefix), "COPILOT_PKG_CACHE_HOME": str(cache_home)}
    env["COPILOT_SEA_EXTRACT_ONLY"] = "1"  # the binary's own switch: unpack, then exit
    proc = subprocess.run(
        [str(prefix / _COPILOT_REL), "--binary-version"],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    if not (cache_home / "pkg" / "linux-x64" / COPILOT_VERSION / "index.js").is_file():
        raise NpmInstallError(f"copilot did not unpack into {cache_home} ({proc.returncode}):\n{proc.stderr[-2000:]}")


def _marker_matches(marker: Path, packages: dict[str, str]) -> bool:
    try:
        return bool(json.loads(marker.read_text()).get("packages") == packages)
    except (OSError, ValueError, AttributeError):
        return False


def _npm_install(prefix: Path, packages: dict[str, str]) -> None:
    if skip_reason() is not None:
        raise NpmInstallError("npm is missing")
    specs = [f"{name}@{version}" for name, version in packages.items()]
    # The platform binaries come as optional dependencies, so they must not be omitted. Claude's
    # postinstall is blocked by npm's allowScripts, but its binary is already in the tarball.
    cmd = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--include=optional", *specs]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise NpmInstallError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")


def _binaries_answer(prefix: Path, expected: dict[str, str]) -> bool:
    for rel, version in expected.items():
        binary = prefix / rel
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
