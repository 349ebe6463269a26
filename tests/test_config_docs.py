"""docs/configuration.md is generated from the Settings model and must match it exactly."""

from __future__ import annotations

from pathlib import Path

from donebell.shared.config.model import Settings
from pydantic import Field

from tools import gen_config_docs


def test_configuration_page_matches_the_settings_model() -> None:
    """The committed page is exactly what the generator renders from the current model."""
    page = gen_config_docs.PAGE.read_text(encoding="utf-8")
    assert page == gen_config_docs.render(), "run: python -m tools.gen_config_docs"


def test_every_key_appears_with_its_default_and_description() -> None:
    """Each model field has a row naming the key, its default and its description."""
    page = gen_config_docs.PAGE.read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(" `"): line for line in page.splitlines() if line.startswith("| `")}
    assert set(rows) == set(Settings.model_fields)
    for name, info in Settings.model_fields.items():
        assert gen_config_docs.default_text(info) in rows[name]
        assert (info.description or "").replace("|", "\\|") in rows[name]


def test_a_changed_model_no_longer_matches_the_page() -> None:
    """The comparison can fail: a new key or a changed default gives a different page."""

    class WithNewKey(Settings):
        brand_new_key: int = Field(7, description="A key the page does not know.")

    class WithOtherDefault(Settings):
        priority: int = Field(4, ge=1, le=5, description=Settings.model_fields["priority"].description)

    page = gen_config_docs.PAGE.read_text(encoding="utf-8")
    assert gen_config_docs.render(WithNewKey) != page
    assert gen_config_docs.render(WithOtherDefault) != page


def test_check_mode_exits_1_when_out_of_date(tmp_path: Path) -> None:
    """`--check` passes on the generated page and fails on a stale one."""
    current = tmp_path / "configuration.md"
    current.write_text(gen_config_docs.render(), encoding="utf-8")
    assert gen_config_docs.main(["--check", "--output", str(current)]) == 0
    current.write_text("stale\n", encoding="utf-8")
    assert gen_config_docs.main(["--check", "--output", str(current)]) == 1
