"""The validated configuration (pydantic-settings): JSON file + ``DONEBELL_<KEY>`` overrides.

The single source of every key: the generator (``python -m tools.gen_config_fields``)
renders the field table :mod:`donebell.shared.config.fields` from this model, and every reader
normalizes with that table (:mod:`donebell.shared.config.schema`): hooks for their few keys, role
processes through :mod:`donebell.shared.config.view` (which the type checker reads as this model),
and ``config init|check|show``, the supervisor's start-up check and doctor through :func:`load`
here, which then builds this model.
A wrong value is refused with one line that names the key and the file (:class:`ConfigError`).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from donebell.shared import paths
from donebell.shared.config import rules, schema, secret_text
from donebell.shared.paths import config_path
from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, SettingsError

DEFAULT_SERVER = "https://ntfy.sh"
TOPIC_ALPHABET = rules.TOPIC_ALPHABET
#: Every reader raises the same class (the roles' view too): one ``except`` for all.
ConfigError = schema.ConfigError

LEGACY_UNUSED_KEYS = rules.LEGACY_UNUSED_KEYS


class WatchRoot(BaseModel):
    """An extra Codex home to scan (WSL distro, share, other user's home)."""

    path: str
    origin: str | None = None
    sqlite_path: str | None = None


#: The longest duration a key may hold: ten years. A larger one (1e309 reads as infinity) used to
#: pass the check and then overflow a date at render time, dead-lettering every notification.
MAX_SECONDS = 10 * 365 * 86400
MAX_DAYS = MAX_SECONDS // 86400
#: The largest count a key may hold (characters, attempts, a burst size): far beyond any use.
MAX_COUNT = 1_000_000


#: The longest ``approval_wait_seconds``: the installed PermissionRequest hooks' timeout
#: (``workers/kit/install/managed.py``) is this plus a margin, so any allowed wait fits inside it.
APPROVAL_WAIT_MAX = 540
#: The longest wait of an interactive Codex session's PermissionRequest hook: while it waits, the
#: TUI shows only the hook's label, not its own dialog (docs/approvals.md). The installed label
#: names this figure, so no setting can make it untrue.
APPROVAL_WAIT_INTERACTIVE_MAX = 15


class Settings(BaseSettings):
    """Every configuration key, its default, and what it means (the docs are generated from this)."""

    # allow_inf_nan: inf and nan are never a duration or a count (the normalizer refuses them too).
    model_config = SettingsConfigDict(
        env_prefix="DONEBELL_", extra="ignore", validate_default=True, allow_inf_nan=False
    )

    server: str = Field(DEFAULT_SERVER, description="ntfy server base URL.")
    topic: str = Field("", description="ntfy topic to publish to ([-_A-Za-z0-9]{1,64}).")
    token: SecretStr | None = Field(None, description="ntfy access token (Bearer). Secret.")
    username: str | None = Field(None, description="ntfy user for Basic auth.")
    password: SecretStr | None = Field(None, description="ntfy password for Basic auth. Secret.")
    allow_insecure_auth: bool = Field(False, description="Allow credentials over plain http:// to a non-loopback host.")
    priority: int = Field(3, ge=1, le=5, description="ntfy priority 1-5; 3 (default) is omitted from the request.")
    tags: list[str] = Field(
        default_factory=lambda: ["white_check_mark"],
        description="ntfy tags for a finished task: a list, or one comma-separated string.",
    )
    max_message_chars: int = Field(
        180, ge=0, le=MAX_COUNT, description="Maximum characters of the final-message excerpt."
    )
    include_message: bool = Field(False, description="Send the final assistant message excerpt (checked at send time).")
    include_thread_title: bool = Field(False, description="Use the Codex thread title as the notification title.")
    include_task_link: bool = Field(False, description="Add a click link to the Codex task (canonical UUIDs only).")
    include_task_link_action: bool = Field(False, description="Also add a 'view' action with the task link.")
    markdown: bool = Field(False, description="Send Markdown as-is instead of reducing it to one plain line.")
    include_full_path: bool = Field(False, description="Add the working directory to the body.")
    include_stats: bool = Field(False, description="Add the task's duration and token use to the body.")
    idle_detection_mode: Literal["strict", "balanced", "off"] = Field(
        "strict",
        description="strict: never notify on unverifiable evidence; balanced: may after the grace; off: every turn.",
    )
    idle_grace_seconds: float = Field(
        2.0, ge=0, le=MAX_SECONDS, description="Quiet window: the rollout must stay unchanged this long."
    )
    idle_probe_grace_seconds: float = Field(
        120.0, ge=0, le=MAX_SECONDS, description="How long unknown evidence is retried."
    )
    unknown_retry_max_seconds: float = Field(
        60.0,
        ge=0,
        le=MAX_SECONDS,
        description="Longest single wait before the gate looks at a candidate again (0: no cap).",
    )
    goal_aware: bool = Field(True, description="Hold the notification while a Codex goal is active.")
    subagent_orphan_seconds: float = Field(
        1800.0, ge=0, le=MAX_SECONDS, description="After this, a silent running child no longer holds its root."
    )
    suppress_technical_turns: bool = Field(
        True, description="Suppress watcher/notify turns without user and final messages."
    )
    watch_rollouts: bool = Field(True, description="Tail Codex rollout files as a safety net for missed hooks.")
    watch_scan_seconds: float = Field(
        60.0, gt=0, le=MAX_SECONDS, description="Periodic full rescan of the hot set (file events wake sooner)."
    )
    watch_initial_replay_seconds: float = Field(
        300.0, ge=0, le=MAX_SECONDS, description="Replay a newly found rollout only if written this recently."
    )
    watch_roots: list[str | WatchRoot] = Field(default_factory=list, description="Extra (remote) Codex homes to scan.")
    watch_remote_timeout_seconds: float = Field(
        30.0, gt=0, le=MAX_SECONDS, description="Budget of one remote scan run."
    )
    timeout_seconds: float = Field(10.0, gt=0, le=MAX_SECONDS, description="HTTP timeout of one delivery attempt.")
    max_attempts: int = Field(
        0, ge=0, le=MAX_COUNT, description="Dead-letter after this many attempts; 0 retries forever."
    )
    retry_max_seconds: float = Field(900.0, gt=0, le=MAX_SECONDS, description="Cap of the delivery backoff.")
    sent_retention_days: float = Field(
        14.0, ge=0, le=MAX_DAYS, description="Keep sent/ and suppressed/ receipts this long."
    )
    dead_retention_days: float = Field(30.0, ge=0, le=MAX_DAYS, description="Keep dead/ letters this long.")
    enable_claude_code: bool = Field(True, description="Accept Claude Code hook events.")
    watch_claude_transcripts: bool = Field(
        True, description="Tail Claude Code transcripts as a safety net for hooks that never ran."
    )
    origin: str = Field("", description="Label of this machine in the body (default: the host name).")
    chain_notify: list[str] | None = Field(None, description="The user's previous Codex notify program, run first.")
    # Reply to continue (docs/wake.md): opt-in, off by default.
    wake_enabled: bool = Field(False, description="Add signed 'Continue' action buttons and run the wake role.")
    wake_topic: str = Field("", description="ntfy topic the action buttons POST their signed ticket to.")
    wake_token: SecretStr | None = Field(None, description="Token sent by the buttons (a write-only user). Secret.")
    wake_actions: list[dict[str, str]] = Field(
        default_factory=lambda: [{"label": "Continue", "prompt": "continue"}],
        description=(
            "Up to 3 buttons {label, prompt}; the prompt stays local, never in the action. The prompt is one"
            " argument of the agent's command: no leading '-', no NUL byte, at most 131071 bytes."
        ),
    )
    wake_ticket_ttl_seconds: float = Field(
        86400.0, gt=0, le=MAX_SECONDS, description="A button's ticket expires after this."
    )
    wake_tap_max_age_seconds: float = Field(
        600.0, gt=0, le=MAX_SECONDS, description="A tap older than this (the server's clock) is refused as stale."
    )
    wake_codex_args: list[str] = Field(default_factory=list, description="Extra args of `codex exec resume`.")
    wake_claude_args: list[str] = Field(default_factory=list, description="Extra args of `claude -p --resume`.")
    wake_copilot_args: list[str] = Field(
        default_factory=list, description="Extra args of `copilot --resume=<id> -p` (e.g. `--allow-all-tools`)."
    )
    wake_allow_unauthenticated: bool = Field(
        False, description="Allow wake_enabled on a server without an access token (doctor warns)."
    )
    # Allow / Deny from the phone (docs/approvals.md): opt-in, needs reply to continue's setup.
    approvals_enabled: bool = Field(
        False, description="Add signed Allow/Deny buttons to a permission prompt's push; the hook waits for the tap."
    )
    approval_wait_seconds: float = Field(
        120.0,
        ge=5,
        le=APPROVAL_WAIT_MAX,
        description="How long a PermissionRequest hook waits for Allow/Deny (the installed hook timeout is longer).",
    )
    approval_wait_interactive_seconds: float = Field(
        10.0,
        ge=0,
        le=APPROVAL_WAIT_INTERACTIVE_MAX,
        description="The same wait in an interactive Codex session (the TUI hides its own dialog meanwhile); 0: none.",
    )
    host_tag: bool = Field(False, description="Add the machine name (origin) as an ntfy tag, to filter many machines.")
    desk_grace_seconds: float = Field(
        0.0,
        ge=0,
        le=MAX_SECONDS,
        description="Hold a done notification this long; a new turn in the thread meanwhile drops it.",
    )
    desk_grace_failures: bool = Field(
        False, description="Hold failed and stopped notifications for the desk grace too."
    )
    min_task_seconds: float = Field(
        0.0,
        ge=0,
        le=MAX_SECONDS,
        description="Drop a done notification of a task that took less (agent timestamps); 0 = off.",
    )
    quiet_hours: str = Field("", description="Hold notifications inside this local-time window, e.g. '22:00-07:30'.")
    quiet_hours_tz: str = Field("", description="IANA time zone of quiet_hours (default: the machine's local zone).")
    quiet_hours_mode: Literal["digest", "silent"] = Field(
        "digest", description="digest: one notification at the window's end; silent: send at once with priority 1."
    )
    burst_digest_threshold: int = Field(
        0,
        ge=0,
        le=MAX_COUNT,
        description="This many notifications ready within burst_window_seconds go as one digest; 0 = off.",
    )
    burst_window_seconds: float = Field(60.0, gt=0, le=MAX_SECONDS, description="The window of burst_digest_threshold.")

    @field_validator("wake_actions")
    @classmethod
    def _wake_actions(cls, value: list[dict[str, str]]) -> list[dict[str, str]]:
        return rules.check_wake_actions(value)

    @field_validator("topic", "wake_topic")
    @classmethod
    def _topic(cls, value: str) -> str:
        return rules.check_topic(value)

    @field_validator("server")
    @classmethod
    def _server(cls, value: str) -> str:
        return rules.check_server(value)

    @field_validator("token", "wake_token")
    @classmethod
    def _token(cls, value: SecretStr | None) -> SecretStr | None:
        return rules.check_token(value)

    @field_validator("username")
    @classmethod
    def _username(cls, value: str | None) -> str | None:
        return rules.check_username(value)

    @field_validator("password")
    @classmethod
    def _password(cls, value: SecretStr | None) -> SecretStr | None:
        return rules.check_password(value)

    @field_validator("quiet_hours")
    @classmethod
    def _quiet_hours(cls, value: str) -> str:
        return rules.check_quiet_hours(value)

    @field_validator("quiet_hours_tz")
    @classmethod
    def _quiet_hours_tz(cls, value: str) -> str:
        return rules.check_quiet_hours_tz(value)

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: Any) -> Any:
        return rules.split_tags(value)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Explicit values (the file's, passed as init kwargs by load()) lose to the environment.
        return (env_settings, init_settings)

    def redacted(self) -> dict[str, Any]:
        """All keys with secrets replaced by ``"**********"`` (or null when unset), the server's password too."""
        data = self.model_dump(mode="json")
        for name in rules.SECRET_KEYS:
            data[name] = "**********" if getattr(self, name) is not None else None
        data["server"] = secret_text.redact_url(self.server)
        return data


KNOWN_KEYS = frozenset(Settings.model_fields)


class Loaded(BaseModel):
    """A loaded configuration plus what ``config check`` reports about it."""

    settings: Settings
    path: Path
    exists: bool
    unused_legacy: list[str] = []
    warnings: list[str] = []


def load(path: Path | None = None) -> Loaded:
    """Load and validate; raise :class:`ConfigError` with one clear line on any problem.

    The values come from the one strict reader every process uses (:func:`.schema.read_values`:
    refusals, warnings and the loose-file check included); pydantic is only the edge that gives
    the CLI its model, and it must accept them unchanged.
    """
    from donebell.shared.config.fields import FIELDS

    raw = schema.read_values(FIELDS, LEGACY_UNUSED_KEYS, path)
    try:
        # pydantic-settings reads DONEBELL_<KEY> again over these values: it must agree with the normalizer
        settings = Settings.model_validate(raw.values)
    except (ValidationError, SettingsError) as exc:  # the model and the field table disagree: regenerate
        if isinstance(exc, SettingsError):
            raise ConfigError(f"config error in the environment: {exc}") from None
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "?"
        raise ConfigError(
            f"config error in {raw.path}: {key}: {plain_message(err)} (stale shared/config/fields.py?)"
        ) from None
    return Loaded(
        settings=settings, path=raw.path, exists=raw.exists, unused_legacy=raw.unused_legacy, warnings=raw.warnings
    )


def plain_message(err: Mapping[str, Any]) -> str:
    """A validation error's message without pydantic's "Value error, " prefix (our rules' own words)."""
    msg = str(err.get("msg", ""))
    for prefix in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(prefix)
    return msg


def random_topic() -> str:
    """``donebell-`` + 22 unguessable URL-safe characters."""
    return "donebell-" + "".join(secrets.choice(TOPIC_ALPHABET[2:] + "-_") for _ in range(22))


def init_config(path: Path | None = None, *, server: str = DEFAULT_SERVER) -> tuple[Path, bool]:
    """Write a fresh config (0600, dirs 0700) if none exists; ``(path, created)``."""
    path = path or config_path()
    if path.exists():
        return path, False
    paths.remember_created_folders(paths.make_private_dirs(str(path.parent)))  # e.g. ~/.config: --purge removes it
    # wake_topic: the reply topic of the Continue buttons, ready for when wake_enabled is turned on.
    fresh = {"server": server, "topic": random_topic(), "wake_topic": random_topic()}
    body = json.dumps(fresh, indent=2) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(body)
    return path, True


def subscribe_url(settings: Settings) -> str:
    """Where to subscribe: the server without its ``user:password@`` part, and the topic."""
    return f"{secret_text.public_url(settings.server)}/{settings.topic}"
