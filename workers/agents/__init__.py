"""What each agent looks like on disk and on the wire: one folder per agent (issue 25).

``codex/`` and ``claude/`` hold everything that knows that agent's formats and commands: hook
payloads, rollout/transcript records and cursors, gate evidence, titles, the wake adapter.
``turn_status`` is the one classifier both agents' transcripts share. Importing this package
loads nothing else: the hook path imports only the parts its subcommand needs.
"""
