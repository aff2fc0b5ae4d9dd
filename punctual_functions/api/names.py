"""The names jobs and calendars take, in one place: the request models check a body's with the
pattern, and ``calendars.py`` a path's (without loading the models)."""

from __future__ import annotations

import re
from typing import Final

NAME_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"
MAX_NAME_LENGTH: Final = 128
_NAME: Final = re.compile(NAME_PATTERN)


def is_name(text: str) -> bool:
    """Whether ``text`` is a name a job or a calendar may have."""
    return len(text) <= MAX_NAME_LENGTH and _NAME.fullmatch(text) is not None
