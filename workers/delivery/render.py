"""Which payload a record gets: a "needs you" notice has its own kind, every other record is a
done or failed notification.

The choice lives here rather than in ``payload.render`` because ``needs_payload`` builds on
``payload``'s parts (titles, context line, limits): dispatching from ``payload`` would make the two
import each other.
"""

from __future__ import annotations

from typing import Any

from donebell.shared.config.view import SettingsLike
from donebell.shared.records import NEEDS_YOU
from donebell.shared.statedir import StateDir
from donebell.shared.statedir._wake import read_peers
from donebell.shared.text.markdown_text import cut_chars, cut_utf8
from donebell.workers.delivery import payload
from donebell.workers.delivery.needs_payload import render_needs_you
from donebell.workers.kit.labels import origin_label


def render(
    record: dict[str, Any],
    settings: SettingsLike,
    *,
    title_lookup: payload.TitleLookup = payload.agent_title,
    state: StateDir | None = None,
) -> dict[str, Any]:
    """The ntfy publish JSON for ``record`` under ``settings``. Never raises on odd field types.

    When the wake role of ``state`` has heard another machine on the reply topic (docs/wake.md,
    "Several machines"), the title starts with where the task ran (``laptop: project``): a
    collapsed card shows only the title, and two machines with a project folder of the same name
    would look alike there."""
    if record.get("notice") == NEEDS_YOU:  # the task waits for the user
        rendered = render_needs_you(record, settings, title_lookup)
    else:
        rendered = payload.render(record, settings, title_lookup=title_lookup)
    if state is not None and settings.wake_enabled and read_peers(state):
        title = f"{origin_label(record, settings)}: {rendered['title']}"
        rendered["title"] = cut_utf8(cut_chars(title, payload.TITLE_MAX_CHARS), payload.TITLE_MAX_BYTES)
    return rendered
