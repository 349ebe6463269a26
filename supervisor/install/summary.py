"""What ``donebell install`` tells the user at the end: what was wired, what to do next."""

from __future__ import annotations

from typing import TextIO

from donebell.shared import platform
from donebell.shared.text.subscribe_qr import qr_text
from donebell.supervisor.install.service import ServicePlan
from donebell.workers.kit.install.plans import AgentPlan

NO_SERVICE = (
    "no background service: a notification still goes out after each hook (an on-demand worker), "
    "but the rollout safety net needs `donebell run` to be running"
)


def _service_lines(service: ServicePlan | None, *, ok: bool, kind: str) -> list[str]:
    if service is None:
        return [NO_SERVICE]
    if ok:
        return service.messages
    lines = [f"the {kind} service could not be set up (see the error above). {NO_SERVICE}"]
    if platform.under_wsl():
        lines.append("WSL: enable systemd with `[boot]` `systemd=true` in /etc/wsl.conf, then `wsl --shutdown`")
    return lines


def subscribe_lines() -> list[str]:
    """The phone subscription URL and a terminal QR code of it."""
    from donebell.shared.config import model

    try:
        settings = model.load().settings
    except model.ConfigError as exc:
        return [f"cannot read the config to show the subscribe URL: {exc}"]
    url = model.subscribe_url(settings)
    return [
        "Subscribe on your phone (ntfy app: + / Subscribe to topic, or scan the code, or open in a browser):",
        f"    {url}",
        qr_text(url),
    ]


def print_install_summary(
    plans: list[AgentPlan], service: ServicePlan | None, *, service_ok: bool, kind: str, out: TextIO
) -> None:
    out.write("donebell install:\n")
    for plan in plans:
        for message in plan.messages:
            out.write(f"  {plan.agent}: {message}\n")
        for line in plan.after() if plan.after else []:
            out.write(f"  {plan.agent}: {line}\n")
    for line in _service_lines(service, ok=service_ok, kind=kind):
        out.write(f"  service: {line}\n")
    for line in subscribe_lines():
        out.write(f"{line}\n")
    out.write("Then check that it arrives: donebell test   (and `donebell doctor` if it does not)\n")
