"""What an agent's install and doctor wiring is built from: planned file edits with backups
(:mod:`.edits`), style-keeping JSON edits (:mod:`.jsonedit`, :mod:`.hookjson`), the plan one agent
produces (:mod:`.plans`), how donebell recognizes its own hook entries (:mod:`.managed`), a
doctor line (:mod:`.checks`) and backup tidying (:mod:`.tidy`). Agent-neutral: each agent's
``install.py`` (the ``Install`` capability, ``workers/agents/protocols.py``) says what it wires.
"""
