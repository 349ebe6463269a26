"""Where donebell keeps its configuration, its state directory and its service log.

The explicit variables (``DONEBELL_CONFIG``, ``DONEBELL_STATE_DIR``) win; otherwise the host's
convention, the platform seam's ``locations`` choice (``shared/platform/__init__.py``). A
convention of the host, not a mechanism: portable mode keeps it, so a forced run finds the same
files as a native one. Each rule is a function of the environment and the home folder only, so
every one of them is tested on any platform (``tests/test_platform_portable.py``):

* ``xdg`` (Linux and other POSIX): ``$XDG_CONFIG_HOME/donebell/config.json`` and
  ``$XDG_STATE_HOME/donebell`` (an unset or relative value falls back to ``~/.config`` and
  ``~/.local/state``, as the XDG spec says); the service logs to the journal.
* ``library`` (macOS): ``~/Library/Application Support/donebell/{config.json,state}``; the
  launchd agent logs to ``~/Library/Logs/donebell.log``.
* ``appdata`` (Windows): ``%APPDATA%\\donebell\\config.json``, ``%LOCALAPPDATA%\\donebell\\state``;
  the scheduled task logs into the state folder.

Standard library only: the hook path imports this module. It uses the ``*_str`` variants, which
build ``os.path`` strings: ``pathlib`` (with ``urllib.parse`` and ``ipaddress`` behind it) costs
~2.5 ms of a hook's start-up. The :class:`~pathlib.Path` functions are for everyone else and
import it on first call.
"""

from __future__ import annotations

import os

from donebell.shared import platform

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

APP = "donebell"


class RelativePathError(ValueError):
    """``DONEBELL_STATE_DIR`` or ``DONEBELL_CONFIG`` is a relative path.

    Refused rather than resolved: a hook runs in the agent's working directory, so a relative
    path would put state (or read a config) in whatever project the agent happens to be in.
    """


def _explicit(name: str) -> str | None:
    """The absolute path in environment variable ``name``; None when unset or empty."""
    value = os.environ.get(name)
    if not value:
        return None
    if not os.path.isabs(value):
        raise RelativePathError(f"{name} must be an absolute path, not {value!r}")
    return value


def _home() -> str:
    return os.path.expanduser("~")


def user_home() -> str:
    """The user's home folder (the agents' own homes default under it)."""
    return _home()


def config_path_str() -> str:
    """The config file: ``$DONEBELL_CONFIG`` (absolute), else the platform's user config dir."""
    return _explicit("DONEBELL_CONFIG") or default_config_file()


def state_dir_str() -> str:
    """The state directory root: ``$DONEBELL_STATE_DIR`` (absolute), else the platform's user state dir.

    Raises :class:`RelativePathError` for a relative ``$DONEBELL_STATE_DIR``.
    """
    return _explicit("DONEBELL_STATE_DIR") or default_state_dir()


def default_config_file(rule: str | None = None) -> str:
    """The config file by ``rule`` (default: this platform's)."""
    rule = rule or platform.mechanism("locations")
    if rule == "appdata":
        return os.path.join(_appdata("APPDATA", "Roaming"), APP, "config.json")
    if rule == "library":
        return os.path.join(_home(), "Library", "Application Support", APP, "config.json")
    return os.path.join(_xdg("XDG_CONFIG_HOME", ".config"), APP, "config.json")


def default_state_dir(rule: str | None = None) -> str:
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
        return os.path.join(default_state_dir(rule), "notify.log")
    return None


def _appdata(name: str, fallback: str) -> str:
    return os.environ.get(name) or os.path.join(_home(), "AppData", fallback)


def _xdg(name: str, *fallback: str) -> str:
    """An XDG base directory; a relative value is ignored, as the XDG spec says."""
    value = os.environ.get(name)
    return value if value and os.path.isabs(value) else os.path.join(_home(), *fallback)


def make_private_dirs(path: str) -> list[str]:
    """Create ``path`` and every missing parent as 0700, whatever the umask; the folders it
    created, outermost first (``uninstall --purge`` removes them again when they are empty).

    ``os.makedirs`` gives the parents it creates the umask's mode (0777 under ``umask 000``): a
    fresh ``~/.config`` or ``~/.local/state`` would be open to everyone. Folders that already
    exist are left as they are; one that is not a directory is left for the caller to refuse.
    """
    made = []
    missing = []
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            continue
        made.append(folder)
        if not platform.on_windows():
            os.chmod(folder, 0o700)  # a umask can only narrow the mode: make it exact
    return made


#: Beside the config: the folders above it that writing the first config created (a JSON list).
CREATED_FOLDERS_NAME = "created-folders.json"


def remember_created_folders(made: list[str]) -> None:
    """Record, beside the config that ``made`` (from :func:`make_private_dirs`) was created for,
    the folders above its own folder it created: ``uninstall --purge`` removes them again when
    they are empty (a fresh account's ``~/.config``)."""
    if len(made) > 1:
        from donebell.shared import lean_json as json

        fd = os.open(os.path.join(made[-1], CREATED_FOLDERS_NAME), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(made[:-1]) + "\n")


# --- the same, as pathlib.Path (not for the hook path) --------------------------------------


def config_path() -> Path:
    """:func:`config_path_str` as a :class:`~pathlib.Path`."""
    from pathlib import Path

    return Path(config_path_str())


def state_dir_path() -> Path:
    """:func:`state_dir_str` as a :class:`~pathlib.Path`."""
    from pathlib import Path

    return Path(state_dir_str())
