"""The value rules both configuration loaders share: server URL, topic, and the credentials.

The pydantic model (:mod:`donebell.shared.config.model`) calls these from its validators, and the
normalizer of every other reader (:mod:`donebell.shared.config.schema`, through the field table
that ``tools/gen_config_fields.py`` renders, refusing a validator that does not call its rule here)
looks them up in :data:`RULES`, so ``config check``, ``donebell test``, doctor and every role
accept and refuse exactly the same values with the same one-line reason.

A refusal never quotes the value: a server URL may carry ``user:password@``, and a rejected
token is still a token. Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

TOPIC_ALPHABET = "-_" + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
#: Config keys whose value is a secret (the config file holding one must be owner-only).
SECRET_KEYS = ("token", "password", "wake_token")

Value = TypeVar("Value")


def check_topic(value: str) -> str:
    if value and (len(value) > 64 or any(c not in TOPIC_ALPHABET for c in value)):
        raise ValueError("must match [-_A-Za-z0-9]{1,64}")
    return value


def check_server(value: str) -> str:
    """An ``http(s)://host[:port][/path]`` URL that httpx can use as it is; trailing ``/`` dropped."""
    if any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError("must not contain spaces or control characters (a trailing newline?)")
    if not value.startswith(("http://", "https://")):
        raise ValueError("must start with http:// or https://")
    try:
        parts = urlsplit(value)
        port = parts.port  # parsed lazily: "Port out of range 0-65535" is raised here
    except ValueError as exc:  # "Invalid IPv6 URL", a port that is not a number...
        raise ValueError(f"is not a valid URL ({exc})") from None
    if not parts.hostname:
        raise ValueError("has no host name")
    if port == 0:
        raise ValueError("port 0 is not a valid port")
    if parts.query or parts.fragment or value.endswith(("?", "#")):
        raise ValueError("must not have a query (?) or fragment (#)")
    return value.rstrip("/")


def _plain(value: object) -> str | None:
    """The text of a secret (pydantic's ``SecretStr`` or a plain string), None when unset."""
    getter = getattr(value, "get_secret_value", None)
    text = getter() if getter is not None else value
    return text if isinstance(text, str) else None


def check_token(value: Value) -> Value:
    """A Bearer token goes into an HTTP header as it is: printable ASCII, no spaces."""
    text = _plain(value)
    if text and not all(" " < c <= "~" for c in text):
        raise ValueError("must be printable ASCII without spaces or control characters (a trailing newline?)")
    return value


def check_username(value: Value) -> Value:
    """A Basic-auth user name: printable ASCII without spaces, and no ``:`` (it ends the name)."""
    text = _plain(value)
    if text and not all(" " < c <= "~" and c != ":" for c in text):
        raise ValueError("must be printable ASCII without spaces, control characters or ':'")
    return value


def check_password(value: Value) -> Value:
    """A password may hold any printable character, but no control character and no edge space."""
    text = _plain(value)
    if text and (not text.isprintable() or text != text.strip()):
        raise ValueError("must not contain control characters or start or end with a space (a trailing newline?)")
    return value


#: The longest prompt an agent can be started with: Linux refuses one argument of 128 KiB or more
#: (``MAX_ARG_STRLEN``, its terminating NUL included) with E2BIG.
PROMPT_MAX_BYTES = (128 << 10) - 1


def check_wake_actions(value: list[dict[str, str]]) -> list[dict[str, str]]:
    """At most 3 buttons (ntfy's limit), each with a non-empty ``label`` and ``prompt``; the prompt
    is one argument of the agent's command, so no NUL byte and under 128 KiB: refused here rather
    than by every start of the agent."""
    if len(value) > 3:
        raise ValueError("at most 3 actions (ntfy shows no more)")
    for entry in value:
        if not entry.get("label", "").strip() or not entry.get("prompt", "").strip():
            raise ValueError('each action needs a non-empty "label" and "prompt"')
        prompt = entry["prompt"]
        if prompt.startswith("-"):  # it is a positional argument of the agent's CLI
            raise ValueError('a "prompt" must not start with "-"')
        if "\x00" in prompt:
            raise ValueError('a "prompt" must not contain a NUL byte (no program argument can hold one)')
        if len(prompt.encode("utf-8", "surrogatepass")) > PROMPT_MAX_BYTES:
            raise ValueError(f'a "prompt" must be at most {PROMPT_MAX_BYTES} bytes (the longest argument Linux passes)')
    return value


def split_tags(value: Any) -> Any:
    """``"warning,skull"`` (as the reference notifier's config files give tags) -> a list of tags."""
    if isinstance(value, str):
        return [tag.strip() for tag in value.split(",") if tag.strip()]
    return value


def check_quiet_hours(value: str) -> str:
    """``HH:MM-HH:MM`` (24-hour, start != end; crossing midnight allowed), or empty for off."""
    text = value.strip()
    if not text:
        return ""
    parts = text.split("-")
    minutes = [_minute_of_day(p) for p in parts] if len(parts) == 2 else []
    if len(minutes) != 2 or None in minutes or minutes[0] == minutes[1]:
        raise ValueError("must be 'HH:MM-HH:MM' (24-hour clock, start and end differ), e.g. '22:00-07:30'")
    return text


def _minute_of_day(text: str) -> int | None:
    hour, sep, minute = text.strip().partition(":")
    if not sep or not (hour.isdigit() and minute.isdigit()) or len(minute) != 2 or len(hour) > 2:
        return None
    h, m = int(hour), int(minute)
    return h * 60 + m if h < 24 and m < 60 else None


def check_quiet_hours_tz(value: str) -> str:
    """An IANA zone name the system zone database knows, or empty for the local zone."""
    if not value:
        return ""
    from zoneinfo import ZoneInfo  # only when set: not on a hook's path

    try:
        ZoneInfo(value)
    except (ValueError, OSError, LookupError):
        raise ValueError("not a known IANA time zone name (such as 'Europe/Berlin')") from None
    return value


#: field name -> its after-validator (the generator refuses a model validator not listed here).
RULES: dict[str, Callable[[Any], Any]] = {
    "server": check_server,
    "topic": check_topic,
    "token": check_token,
    "username": check_username,
    "password": check_password,
    "wake_topic": check_topic,
    "wake_token": check_token,
    "wake_actions": check_wake_actions,
    "quiet_hours": check_quiet_hours,
    "quiet_hours_tz": check_quiet_hours_tz,
}
#: field name -> its before-validator, applied to the raw value ahead of the type check.
BEFORE_RULES: dict[str, Callable[[Any], Any]] = {"tags": split_tags}


def file_holds_secret(data: dict[str, Any]) -> bool:
    """Does this config file's own content hold a secret (token, password, or a password in the URL)?

    A secret that comes from ``DONEBELL_TOKEN``/``DONEBELL_PASSWORD`` does not make the file secret.
    """
    if any(data.get(key) for key in SECRET_KEYS):
        return True
    server = data.get("server")
    if isinstance(server, str):
        try:
            return bool(urlsplit(server).password)
        except ValueError:
            return "@" in server  # unparsable: assume the worst
    return False


#: Keys of the reference notifier's ``ntfy-config.json`` that donebell accepts but does not use.
LEGACY_UNUSED_KEYS = frozenset(
    {
        "goal_poll_seconds",
        "subagent_classification_grace_seconds",
        "suppress_subagents",
        "watch_discovery_seconds",
        "watch_cursor_batch_size",
        "worker_sqlite_path",
    }
)
