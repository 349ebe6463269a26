"""The ntfy JSON of one outbox record, rendered from the record and the *current* config.

Rendering happens immediately before every attempt (docs/delivery.md), so
a privacy option switched off while a record waits is honoured by its retries too.

Shape (JSON publish to the server root)::

    {"topic", "title", "message", "tags", ["priority"], ["markdown": true], ["click"], ["actions"],
     "sequence_id"}

* title: the project directory name; the Codex thread title with ``include_thread_title``;
* message: ``[outcome ·] [final-message ·] [project-or-path ·] [stats ·] origin · #short-id``
  (``shared/text/short_id.py``: the random tail of the thread or session id); a Claude StopFailure's
  outcome reads ``failed: <kind> — <the API's first line>`` (with ``include_message``); message
  text is redacted (:mod:`donebell.shared.text.redaction`);
* tags: ``settings.tags`` for a finished task, ``x`` for a failed one, ``stop_sign`` for a stopped
  one (the wording says "failed: <error>" / "stopped" too, so it reads right without emoji);
* the message is cut to 3,500 UTF-8 bytes (ntfy turns >= 4,096 into a refused attachment): the
  excerpt is cut to fit, so the outcome and the context always arrive.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from donebell.shared.config.view import SettingsLike
from donebell.shared.keys import sequence_id
from donebell.shared.text.markdown_text import (
    cut_chars,
    cut_utf8,
    fold_whitespace,
    reduce_markdown,
    strip_controls,
)
from donebell.shared.text.redaction import redact
from donebell.shared.text.short_id import short_id
from donebell.workers.agents.registry import agent
from donebell.workers.kit.labels import format_duration, origin_label

MESSAGE_MAX_BYTES = 3500
TITLE_MAX_CHARS = 120
TITLE_MAX_BYTES = 480
ERROR_MAX_CHARS = 200
#: Less room than this for the final-message excerpt drops it rather than send a stub.
MIN_EXCERPT_BYTES = 16
#: ntfy refuses a JSON body of 8,192 bytes or more (41303); stay well below.
BODY_MAX_BYTES = 7600
SEP = " · "
FAILED_TAG = "x"
STOPPED_TAG = "stop_sign"

TitleLookup = Callable[[dict[str, Any]], str | None]


def agent_title(record: dict[str, Any]) -> str | None:
    """The record's agent's own name for the task (``Titles.task_title``); None for an unknown agent."""
    found = agent(record.get("provider"))
    return found.task_title(record) if found is not None else None


def render(
    record: dict[str, Any], settings: SettingsLike, *, title_lookup: TitleLookup = agent_title
) -> dict[str, Any]:
    """The ntfy publish JSON for ``record`` under ``settings``. Never raises on odd field types."""
    provider = _text(record.get("provider"))
    project = project_name(_text(record.get("cwd")))
    task_title = _task_title(record, settings, title_lookup)
    title = task_title or project or _default_title(record)
    outcome = record.get("outcome")
    api_error = api_error_line(record, settings) if outcome == "failed" else ""
    headline = SEP.join(_lead(record, outcome, api_error))
    message = "" if api_error else _message(record, settings)  # a StopFailure's text is its API error
    context = SEP.join(p for p in _context_parts(record, settings, project, task_title) if p)
    # Markdown keeps its lines; the outcome goes above and the context below, not into a block.
    sep = "\n\n" if message and settings.markdown else SEP

    def body(limit: int) -> str:
        return fit_body(headline, message, context, sep, limit)

    payload: dict[str, Any] = {
        "topic": settings.topic,
        "title": cut_utf8(cut_chars(title, TITLE_MAX_CHARS), TITLE_MAX_BYTES),
        "message": body(MESSAGE_MAX_BYTES),
        "tags": _tags(outcome, settings) + ([tag] if (tag := host_tag(record, settings)) else []),
    }
    if settings.priority != 3:
        payload["priority"] = settings.priority
    if settings.markdown and message:
        payload["markdown"] = True
    _add_links(payload, record, settings)
    payload["sequence_id"] = _text(record.get("sequence_id")) or sequence_id(provider or "record", record["key"])
    return _fit(payload, body)


def _task_title(record: dict[str, Any], settings: SettingsLike, title_lookup: TitleLookup) -> str:
    """The agent's own name for the task, with ``include_thread_title`` ("" if off or unknown)."""
    if not settings.include_thread_title:
        return ""
    return _one_line(title_lookup(record) or "")


def _lead(record: dict[str, Any], outcome: object, api_error: str) -> list[str]:
    """What the message opens with: the outcome leads, so "failed: …" is readable before a long
    final message is cut; then the record's note and the test marker."""
    lead: list[str] = []
    if outcome == "failed":
        error = _one_line(redact(_text(record.get("error"))))
        failed = f"failed: {cut_chars(error, ERROR_MAX_CHARS)}" if error else "failed"
        # a kind taken from that very line (claude/api_error.py) is not said twice
        shown = api_error and not (error and api_error.removeprefix("API Error: ").startswith(error.rstrip("…")))
        lead.append(f"{failed} — {cut_chars(api_error, ERROR_MAX_CHARS)}" if shown else failed)
    elif outcome == "stopped":
        lead.append("stopped")
    if isinstance(record.get("note"), str) and record["note"]:
        lead.append(_one_line(record["note"]))  # e.g. background work stopped when Claude exited
    if record.get("test") is True:
        lead.append("test notification from donebell")
    return lead


def _context_parts(record: dict[str, Any], settings: SettingsLike, project: str, task_title: str) -> list[str]:
    """What the message closes with: path or project (when the title hid it), stats, origin, #id."""
    parts: list[str] = []
    if settings.include_full_path and _text(record.get("cwd")):
        parts.append(_one_line(_text(record.get("cwd"))))
    elif task_title and project and project != task_title:
        parts.append(project)
    if settings.include_stats:
        parts.extend(stats_parts(record))
    parts.append(origin_label(record, settings))
    ident = _text(record.get("thread_id")) or _text(record.get("session_id"))
    if ident:
        parts.append(f"#{short_id(ident)}")
    return parts


def _add_links(payload: dict[str, Any], record: dict[str, Any], settings: SettingsLike) -> None:
    """The agent's link to the task (click, "Open task" button), then the reply-to-continue buttons."""
    found = agent(record.get("provider"))
    url = found.task_link(record) if found is not None else None
    if url and settings.include_task_link:
        payload["click"] = url
    if url and settings.include_task_link and settings.include_task_link_action:
        payload["actions"] = [{"action": "view", "label": "Open task", "url": url}]
    if settings.wake_enabled:  # reply to continue (docs/wake.md): signed buttons after the link
        from donebell.workers.wake.actions import add_wake_actions

        add_wake_actions(payload, record, settings)


def fit_body(headline: str, excerpt: str, context: str, sep: str, limit: int) -> str:
    """The message in at most ``limit`` UTF-8 bytes: the excerpt is cut so outcome and context stay."""
    frame = [p for p in (headline, context) if p]
    if excerpt:
        room = limit - len(sep.join([*frame, ""]).encode("utf-8")) if frame else limit
        excerpt = cut_utf8(excerpt, room) if room >= MIN_EXCERPT_BYTES else ""
    return cut_utf8(sep.join(p for p in (headline, excerpt, context) if p), limit)


def api_error_line(record: dict[str, Any], settings: SettingsLike) -> str:
    """A Claude StopFailure's API error text, first line only, while ``include_message`` is on."""
    sources = record.get("sources")
    if not settings.include_message or not (isinstance(sources, list) and "claude-stopfailure" in sources):
        return ""
    for name in ("last_message", "error_details"):  # the synthetic "API Error: …" message, the raw answer
        for line in redact(_text(record.get(name))).splitlines():
            if line.strip():
                return _one_line(line)
    return ""


def _message(record: dict[str, Any], settings: SettingsLike) -> str:
    """The final-message excerpt, only while ``include_message`` is on *now*, secrets redacted."""
    raw = record.get("last_message")
    if not settings.include_message or not isinstance(raw, str) or settings.max_message_chars <= 0:
        return ""
    raw = redact(raw)
    if settings.markdown:
        text = strip_controls(raw, keep_newlines=True).strip()
    else:
        text = reduce_markdown(strip_controls(raw, keep_newlines=True))
    return cut_chars(text, settings.max_message_chars)


def _tags(outcome: object, settings: SettingsLike) -> list[str]:
    if outcome == "failed":
        return [FAILED_TAG]
    if outcome == "stopped":
        return [STOPPED_TAG]
    return [t for t in settings.tags if t]


def project_name(cwd: str) -> str:
    """The last component of a POSIX or Windows working directory ("" if none)."""
    trimmed = cwd.strip().rstrip("/\\")
    name = re.split(r"[/\\]", trimmed)[-1] if trimmed else ""
    return _one_line(name if not name.endswith(":") else trimmed)


def _default_title(record: dict[str, Any]) -> str:
    if record.get("test") is True:
        return "donebell test"
    return display_name(record)


def display_name(record: dict[str, Any]) -> str:
    """The record's agent as a person names it ("Codex" for a record of no known agent, as always)."""
    found = agent(record.get("provider"))
    return found.DISPLAY_NAME if found is not None else "Codex"


def host_tag(record: dict[str, Any], settings: SettingsLike) -> str | None:
    """``host_tag``: the origin label as one ntfy tag (lower case, ``[a-z0-9._-]``), or None."""
    if not settings.host_tag:
        return None
    tag = re.sub(r"[^a-z0-9._-]+", "-", origin_label(record, settings).lower()).strip("-")
    return tag[:64] or None


def stats_parts(record: dict[str, Any]) -> list[str]:
    """``["4m 12s", "12.3k tokens"]`` from the record's ``stats`` (filled at promotion)."""
    raw = record.get("stats")
    stats: dict[str, Any] = raw if isinstance(raw, dict) else {}
    duration = stats.get("duration_ms", record.get("duration_ms"))
    tokens = stats.get("total_tokens")
    out = []
    if isinstance(duration, (int, float)) and _is_number(duration) and duration >= 0:
        out.append(format_duration(float(duration) / 1000))
    if isinstance(tokens, (int, float)) and _is_number(tokens) and tokens >= 0:
        out.append(f"{format_count(int(tokens))} tokens")
    return out


def format_count(n: int) -> str:
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k".replace(".0k", "k")
    return f"{n / 1_000_000:.1f}M".replace(".0M", "M")


def _fit(payload: dict[str, Any], body: Callable[[int], str]) -> dict[str, Any]:
    """Shrink the message until the JSON body is safely under ntfy's body limit (escapes grow it)."""
    budget = MESSAGE_MAX_BYTES
    while len(json.dumps(payload, ensure_ascii=False).encode("utf-8")) > BODY_MAX_BYTES and budget > 64:
        budget //= 2
        payload["message"] = body(budget)
    return payload


def _one_line(text: str) -> str:
    return fold_whitespace(text)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
