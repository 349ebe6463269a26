"""Configuration: one model, one generated table, one normalizer and reader.

* :mod:`.model` is the pydantic-settings ``Settings``: the single source of every key, type,
  default and bound. The CLI (``config init|show|check|set``), the supervisor's start-up check and
  doctor validate with it.
* :mod:`.fields` is GENERATED from the model (``python -m tools.gen_config_fields``): the field
  table every reader normalizes with, importable on the hook path.
* :mod:`.schema` is the one normalizer of values (with :mod:`.coerce`, pydantic's lax coercions in
  the stdlib, and :mod:`.rules`, the URL, topic and credential rules the model shares) and the two
  readers of file + ``DONEBELL_<KEY>``: strict (roles, CLI) and the hook's, which never raises;
  it also reads the JSON file itself (``read_object``).
* :mod:`.view` gives role processes their settings without pydantic (the type checker reads them
  as the model).

The contract: every reader accepts and refuses the same values with the same one-line message,
and the hook path imports none of pydantic, pathlib or typing (only ``fields``, ``schema`` and
``coerce``; ``shared/lean_core.py`` names them). This ``__init__`` imports nothing,
so importing one part never loads another.
"""
