"""The generated light settings view stays current: the committed module is exactly what the
generator renders from the model, a changed model is caught, and what the view cannot mirror is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from donebell.shared.config.model import Settings
from pydantic import Field, field_validator

from tools import gen_settings_view


def test_committed_view_matches_the_model() -> None:
    """shared/config/view.py and shared/config/fields.py are exactly what the generator renders from the current model."""
    current = gen_settings_view.MODULE.read_text(encoding="utf-8")
    assert current == gen_settings_view.render(), "run: python -m tools.gen_settings_view"
    table = gen_settings_view.FIELDS_MODULE.read_text(encoding="utf-8")
    assert table == gen_settings_view.render_fields(), "run: python -m tools.gen_settings_view"


def test_a_changed_model_renders_a_different_view() -> None:
    """A new key, a changed default or a changed bound each change the rendered module."""

    class WithNewKey(Settings):
        brand_new_key: int = Field(7, ge=1, description="A key the view does not know.")

    class WithOtherDefault(Settings):
        priority: int = Field(4, ge=1, le=5)

    class WithOtherBound(Settings):
        priority: int = Field(3, ge=2, le=5)

    committed = gen_settings_view.MODULE.read_text(encoding="utf-8")
    table = gen_settings_view.FIELDS_MODULE.read_text(encoding="utf-8")
    assert gen_settings_view.render(WithNewKey) != committed
    for model in (WithNewKey, WithOtherDefault, WithOtherBound):
        assert gen_settings_view.render_fields(model) != table
    assert 'FieldSpec("brand_new_key", "int", 7, ge=1)' in gen_settings_view.render_fields(WithNewKey)


def test_check_mode_fails_on_a_stale_module(tmp_path: Path) -> None:
    """`--check` exits 0 on the rendered module and 1 on a stale one."""
    module = tmp_path / "view.py"
    module.write_text(gen_settings_view.render(), encoding="utf-8")
    table = tmp_path / "fields.py"
    table.write_text(gen_settings_view.render_fields(), encoding="utf-8")
    assert gen_settings_view.main(["--check", "--output", str(module)]) == 0
    table.write_text(table.read_text().replace('"strict"', '"lenient"', 1), encoding="utf-8")
    assert gen_settings_view.main(["--check", "--output", str(module)]) == 1
    table.write_text(gen_settings_view.render_fields(), encoding="utf-8")
    module.write_text(module.read_text().replace('"strict"', '"lenient"', 1), encoding="utf-8")
    assert gen_settings_view.main(["--check", "--output", str(module)]) == 1


def test_generator_refuses_what_the_view_cannot_mirror() -> None:
    """A type, constraint or validator the engine does not reproduce fails generation, naming the key."""

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

    for model, word in (
        (WithDict, "extra_map"),
        (WithLength, "origin"),
        (WithOwnValidator, "origin"),
        (WithRequired, "needed"),
    ):
        with pytest.raises(gen_settings_view.UnsupportedModel, match=word):
            gen_settings_view.render(model)
