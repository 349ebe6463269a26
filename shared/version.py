"""The version of donebell, written once: pyproject.toml, ``donebell --version`` and the ntfy
User-Agent all read it here (a module of its own, so the delivery role need not import the CLI)."""

VERSION = "0.1.0"
