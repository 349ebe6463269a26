"""The generated field table stays current: the committed module is exactly what the generator
renders from the model, a changed model is caught, and what the normalizer cannot reproduce is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from donebell.shared.config.model import Settings
from pydantic import Field, SecretStr, field_validator

from tools import gen_config_fields


def test_committed_table_matches_the_model() -> None:
    """shared/config/fields.py is exactly what the generator renders from the current model."""
    current = gen_config_fields.MODULE.read_text(encoding="utf-8")
    assert current == gen_config_fields.render(), "run: python -m tools.gen_config_fields"


def test_a_changed_model_renders_a_different_table() -> None:
    """A new key, a changed default or a changed bound each change the rendered module."""

    class WithNewKey(Settings):
        brand_new_key: int = Field(7, ge=1, description="A key the table does not know.")

    class WithOtherDefault(Settings):
        priority: int = Field(4, ge=1, le=5)

    class WithOtherBound(Settings):
        priority: int = Field(3, ge=2, le=5)

    table = gen_config_fields.MODULE.read_text(encoding="utf-8")
    for model in (WithNewKey, WithOtherDefault, WithOtherBound):
        assert gen_config_fields.render(model) != table
    assert 'FieldSpec("brand_new_key", "int", 7, ge=1)' in gen_config_fields.render(WithNewKey)


def test_check_mode_fails_on_a_stale_module(tmp_path: Path) -> None:
    """`--check` exits 0 on the rendered module and 1 on a stale one."""
    table = tmp_path / "fields.py"
    table.write_text(gen_config_fields.render(), encoding="utf-8")
    assert gen_config_fields.main(["--check", "--output", str(table)]) == 0
    table.write_text(table.read_text().replace('"strict"', '"lenient"', 1), encoding="utf-8")
    assert gen_config_fields.main(["--check", "--output", str(table)]) == 1


def test_generator_refuses_what_the_normalizer_cannot_reproduce() -> None:
    """A type, constraint or validator the normalizer does not reproduce fails generation, naming the key."""

    class WithDict(Settings):
        extra_map: dict[str, int] = Field(default_factory=dict)

    class WithLength(Settings):
        origin: str = Field("", max_length=10)

    class WithOwnValidator(Settings):
        @field_validator("origin")
        @classmethod
        def _origin(cls, value: str) -> str:
            return value.strip()

    class WithRequired(Settings):
        needed: str

    class WithNewSecret(Settings):
        relay_token: SecretStr | None = None

    for model, word in (
        (WithDict, "extra_map"),
        (WithLength, "origin"),
        (WithOwnValidator, "origin"),
        (WithRequired, "needed"),
        (WithNewSecret, "SECRET_KEYS"),  # else a loose file holding it would load, and output would show it
    ):
        with pytest.raises(gen_config_fields.UnsupportedModel, match=word):
            gen_config_fields.render(model)
