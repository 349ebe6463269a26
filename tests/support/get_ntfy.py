"""Fetch the real ntfy servers (Debian's `ntfy` package) into cache folders, for the suite.

    python tests/support/get_ntfy.py        # both versions: prints their paths; exit 1 with the reason if not
    python tests/support/get_ntfy.py sid    # one of them

Debian packages ntfy as one static Go binary, which runs on this machine's libc, in two suites that
are the two ends of the server range donebell supports: `trixie` ships 2.11.0 (no card updates), `sid`
2.27.0 (``sequence_id`` updates and ``PUT /<topic>/<sequence_id>/clear``). Each is fetched with a
private apt list of its one suite (the archive address is the one the machine's own apt sources
name), so the system's sources, lists and packages stay as they are and nothing is installed as
root: `apt-get download` + `dpkg-deb -x` into ``~/.cache/donebell-ntfy/`` (trixie) and
``~/.cache/donebell-ntfy-sid/`` (``DONEBELL_NTFY_CACHE`` moves both: ``<it>`` and ``<it>-sid``). A
second call finds the unpacked binary and returns at once; concurrent callers serialise on a lock
file.

`.ci/run` runs this script and fails when it fails; the fixture (`support.ntfy_real`) calls
`ensure_ntfy` and skips with the reason where it could not get the server, unless
``DONEBELL_REQUIRE_REAL_NTFY=1`` (set by `.ci/run`) turns that into a failure.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

SUITE = "trixie"
#: The suites fetched, oldest server first: the real-server tests that depend on the version run on each.
SUITES = ("trixie", "sid")
SYSTEM_SOURCES = (Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list"))
FALLBACK_ARCHIVE = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


class NtfyUnavailable(RuntimeError):
    """The server could not be fetched here; the message says why (the reason a test skips with)."""


CACHE_ENV = "DONEBELL_NTFY_CACHE"
#: As the run started: the suite's `no_outside_config` fixture drops DONEBELL_* variables inside a
#: test, and a server a test starts itself must still come from the same cache.
_CACHE_AT_START = os.environ.get(CACHE_ENV)


def cache_dir(suite: str = SUITE) -> Path:
    base = Path(os.environ.get(CACHE_ENV) or _CACHE_AT_START or Path.home() / ".cache" / "donebell-ntfy")
    return base if suite == SUITE else base.with_name(f"{base.name}-{suite}")


def binary_path(cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / "root" / "usr" / "bin" / "ntfy"


def debian_archive() -> str:
    """The archive URI the machine's own apt sources name for Debian's main suites (not -security)."""
    for path in SYSTEM_SOURCES:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        for uri in re.findall(r"^\s*URIs:\s*(\S+)", text, re.MULTILINE) + re.findall(
            r"^\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)", text, re.MULTILINE
        ):
            if not uri.rstrip("/").endswith("-security"):
                return str(uri)
    return FALLBACK_ARCHIVE


def _apt(cache: Path, *args: str) -> None:
    options = [
        "-o", "Dir::Etc::SourceList=/dev/null",
        "-o", f"Dir::Etc::SourceParts={cache / 'sources'}",
        "-o", f"Dir::State::Lists={cache / 'lists'}",
        "-o", f"Dir::Cache={cache / 'apt-cache'}",
        "-o", "APT::Sandbox::User=root",  # the private folders are not readable by _apt
        "-qq",
    ]  # fmt: skip
    run = subprocess.run(["apt-get", *options, *args], cwd=cache, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        raise NtfyUnavailable(f"apt-get {args[0]} failed: {(run.stderr or run.stdout).strip()[-400:]}")


def _fetch(cache: Path, suite: str) -> None:
    for tool in ("apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            raise NtfyUnavailable(f"{tool} is not on PATH (not a Debian-like machine)")
    if not Path(KEYRING).exists():
        raise NtfyUnavailable(f"{KEYRING} is missing: cannot verify Debian's archive")
    (cache / "sources").mkdir(parents=True, exist_ok=True)
    (cache / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (cache / "apt-cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    (cache / "sources" / f"{suite}.sources").write_text(
        f"Types: deb\nURIs: {debian_archive()}\nSuites: {suite}\nComponents: main\nSigned-By: {KEYRING}\n",
        encoding="utf-8",
    )
    _apt(cache, "update")
    for old in cache.glob("ntfy_*.deb"):
        old.unlink()
    _apt(cache, "download", "ntfy")
    debs = sorted(cache.glob("ntfy_*.deb"))
    if not debs:
        raise NtfyUnavailable("apt-get download ntfy left no ntfy_*.deb")
    deb = debs[-1]
    staging = cache / "root.partial"
    shutil.rmtree(staging, ignore_errors=True)
    subprocess.run(["dpkg-deb", "-x", str(deb), str(staging)], check=True, capture_output=True, timeout=120)
    shutil.rmtree(cache / "root", ignore_errors=True)
    staging.rename(cache / "root")  # the binary appears whole or not at all


def _runs(binary: Path) -> bool:
    try:
        return subprocess.run([str(binary), "--help"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def ensure_ntfy(suite: str = SUITE) -> Path:
    """The path of a runnable ntfy binary of Debian's ``suite``, fetched on first use;
    `NtfyUnavailable` says why not."""
    if suite not in SUITES:
        raise NtfyUnavailable(f"unknown suite {suite!r} (known: {', '.join(SUITES)})")
    cache = cache_dir(suite)
    binary = binary_path(cache)
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.is_file():
            try:
                _fetch(cache, suite)
            except (OSError, subprocess.SubprocessError) as exc:
                raise NtfyUnavailable(f"fetching Debian {suite}'s ntfy failed: {exc}") from exc
    if not _runs(binary):
        raise NtfyUnavailable(f"{binary} does not run on this machine")
    return binary


def main(suites: list[str] | None = None) -> int:
    """Fetch every suite named (all of `SUITES` by default); 1 when any of them could not be had."""
    failed = 0
    for suite in suites or list(SUITES):
        try:
            print(ensure_ntfy(suite))
        except NtfyUnavailable as exc:
            print(f"get_ntfy: {suite}: {exc}", file=sys.stderr)
            failed = 1
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
