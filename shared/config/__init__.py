"""Configuration: one model, one normalizer, one file reader.

* :mod:`.model` is the pydantic-settings ``Settings``: the single source of every key, type,
  default and bound. The CLI (``config init|show|check|set``) and the supervisor validate with it.
* :mod:`.fields` and :mod:`.view` are GENERATED from the model (``python -m tools.gen_settings_view``):
  the field table every reader normalizes with, and the typed view role processes read.
* :mod:`.schema` is the one normalizer of values (with :mod:`.coerce`, pydantic's lax coercions in
  the stdlib, and :mod:`.rules`, the URL, topic and credential rules the model shares).
* :mod:`.raw_file` reads the JSON file and ``DONEBELL_<KEY>`` overrides; :mod:`.light` validates
  a whole file without pydantic for role processes.

The contract: every reader accepts and refuses the same values with the same one-line message,
and the hook path imports none of pydantic, pathlib or typing (only ``raw_file``, ``fields``,
``schema`` and ``coerce``; ``shared/lean_core.py`` names them). This ``__init__`` imports nothing,
so importing one part never loads another.
"""
