"""Where donebell keeps its configuration, its state and its service log, per platform.

A convention of the host, not a mechanism: portable mode keeps it, so a forced run finds the same
files as a native one. Each platform's rule is a function of the environment and the home folder
only, so every one of them is tested on any platform (``tests/test_platform_seam.py``).

* ``xdg`` (Linux and other POSIX): ``$XDG_CONFIG_HOME/donebell/config.json`` and
  ``$XDG_STATE_HOME/donebell`` (an unset or relative value falls back to ``~/.config`` and
  ``~/.local/state``, as the XDG spec says); the service logs to the journal.
* ``library`` (macOS): ``~/Library/Application Support/donebell/{config.json,state}``; the
  launchd agent logs to ``~/Library/Logs/donebell.log``.
* ``appdata`` (Windows): ``%APPDATA%\\donebell\\config.json``, ``%LOCALAPPDATA%\\donebell\\state``;
  the scheduled task logs into the state folder.

Standard library only, on ``os.path`` strings: the hook path imports this module.
"""

from __future__ import annotations

import os

from donebell.shared import platform

APP = "donebell"


def config_file(rule: str | None = None) -> str:
    """The config file by ``rule`` (default: this platform's)."""
    rule = rule or platform.mechanism("locations")
    if rule == "appdata":
        return os.path.join(_appdata("APPDATA", "Roaming"), APP, "config.json")
    if rule == "library":
        return os.path.join(_home(), "Library", "Application Support", APP, "config.json")
    return os.path.join(_xdg("XDG_CONFIG_HOME", ".config"), APP, "config.json")


def state_dir(rule: str | None = None) -> str:
    """The state directory root by ``rule`` (default: this platform's)."""
    rule = rule or platform.mechanism("locations")
    if rule == "appdata":
        return os.path.join(_appdata("LOCALAPPDATA", "Local"), APP, "state")
    if rule == "library":
        return os.path.join(_home(), "Library", "Application Support", APP, "state")
    return os.path.join(_xdg("XDG_STATE_HOME", ".local", "state"), APP)


def service_log(rule: str | None = None) -> str | None:
    """The file the background service logs to, or None where it logs to the journal."""
    rule = rule or platform.mechanism("locations")
    if rule == "library":
        return os.path.join(_home(), "Library", "Logs", f"{APP}.log")
    if rule == "appdata":
        return os.path.join(state_dir(rule), "notify.log")
    return None


def _home() -> str:
    return os.path.expanduser("~")


def _appdata(name: str, fallback: str) -> str:
    return os.environ.get(name) or os.path.join(_home(), "AppData", fallback)


def _xdg(name: str, *fallback: str) -> str:
    """An XDG base directory; a relative value is ignored, as the XDG spec says."""
    value = os.environ.get(name)
    return value if value and os.path.isabs(value) else os.path.join(_home(), *fallback)
