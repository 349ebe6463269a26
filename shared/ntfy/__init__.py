"""The ntfy transport: publish (:mod:`.client`), subscribe (:mod:`.subscribe`), proxy rules
(:mod:`.proxy`), the access probe (:mod:`.access`), retry classes (:mod:`.retry`, :mod:`.refusal`)
and the attempt deadline (:mod:`.deadline`).

One package that the delivery role, the wake role and the CLI (``test``, ``doctor``, ``install``)
all use, so no one reaches into the delivery role for its client (httpx's client-plus-transport
shape). Importing it loads none of its parts: httpx is paid only by who publishes or subscribes.
"""
