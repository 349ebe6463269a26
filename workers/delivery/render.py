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
from donebell.workers.delivery import payload
from donebell.workers.delivery.needs_payload import render_needs_you


def render(
    record: dict[str, Any], settings: SettingsLike, *, title_lookup: payload.TitleLookup = payload.agent_title
) -> dict[str, Any]:
    """The ntfy publish JSON for ``record`` under ``settings``. Never raises on odd field types."""
    if record.get("notice") == NEEDS_YOU:  # the task waits for the user
        return render_needs_you(record, settings, title_lookup)
    return payload.render(record, settings, title_lookup=title_lookup)
