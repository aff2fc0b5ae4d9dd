"""The console's choices are the domain's enums: its lists (values with a label each, in the order a
person reads them) are written out in its JavaScript, and checked here against the one source."""

from __future__ import annotations

import json
import re
from enum import StrEnum
from pathlib import Path

import pytest

from punctual_functions.core.calendars import OnExcluded
from punctual_functions.core.model import (
    AlertKind,
    JobStatus,
    MisfirePolicy,
    OnComplete,
    OverlapPolicy,
    Reason,
    RunStatus,
)

STATIC = Path(__file__).resolve().parents[2] / "punctual" / "console" / "static"


def _array(file: str, name: str) -> str:
    match = re.search(rf"const {name} = (\[.*?\]);", (STATIC / file).read_text(), re.S)
    assert match is not None, f"{name} is no longer an array in {file}"
    return match.group(1)


def _values(file: str, name: str) -> list[str]:
    """The values of a JavaScript array of strings, or of ``[value, label]`` pairs."""
    items = json.loads(re.sub(r",\s*\]", "]", _array(file, name)))
    return [item[0] if isinstance(item, list) else item for item in items]


@pytest.mark.parametrize(
    ("file", "name", "enum"),
    [
        ("lib.js", "JOB_STATUSES", JobStatus),
        ("lib.js", "RUN_STATUSES", RunStatus),
        ("form.js", "OVERLAPS", OverlapPolicy),
        ("form.js", "MISFIRES", MisfirePolicy),
        ("form.js", "ON_EXCLUDED", OnExcluded),
        ("job.js", "REASONS", Reason),
        ("job.js", "ALERT_KINDS", AlertKind),
    ],
)
def test_a_console_list_names_every_value_of_its_enum_and_nothing_else(
    file: str, name: str, enum: type[StrEnum]
) -> None:
    values = _values(file, name)
    assert len(values) == len(set(values))
    assert set(values) == {member.value for member in enum}


def test_the_on_complete_choice_offers_each_policy() -> None:
    form = (STATIC / "form.js").read_text()
    offered = re.findall(r'select\("on_complete", (\[.*?\]\])\)', form)
    assert offered, "the on_complete select is no longer written as a list of pairs"
    for choices in offered:
        assert {value for value, _label in json.loads(choices)} == {member.value for member in OnComplete}


def test_the_lists_are_read_as_the_javascript_has_them() -> None:
    assert _values("form.js", "MISFIRES")[0] == "run_once"
    assert "ACTIVE" in _values("lib.js", "JOB_STATUSES")
