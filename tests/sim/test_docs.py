"""docs/scale.md lists the simulator's parameters as the code holds them."""

from __future__ import annotations

from pathlib import Path

from punctual.sim.docs import BEGIN, END, parameters_markdown

PAGE = Path(__file__).resolve().parents[2] / "docs" / "scale.md"


def test_the_scale_page_lists_every_parameter_with_its_value_and_source() -> None:
    text = PAGE.read_text()
    shown = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert shown == parameters_markdown(), "regenerate it: python -m punctual.sim.docs"
