"""How the CLI shows things: aligned tables for people, JSON for scripts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import click


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=False))


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    """A plain aligned table; long cells are cut so one row stays one line."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [len(header) for header in headers]
    for row in cells:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]
    lines = [
        "  ".join(header.upper().ljust(width) for header, width in zip(headers, widths, strict=True)).rstrip()
    ]
    lines += [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in cells
    ]
    return "\n".join(lines)


def fields(pairs: Sequence[tuple[str, Any]], *, limit: int | None = 200) -> str:
    """``key: value`` lines for one object; a value longer than ``limit`` is cut (None: never, for
    values a reader copies whole)."""
    width = max(len(key) for key, _ in pairs)
    return "\n".join(f"{key.ljust(width)}  {_cell(value, limit=limit)}" for key, value in pairs)


def _cell(value: Any, limit: int | None = 60) -> str:
    if value is None:
        text = "-"
    elif isinstance(value, dict | list):
        text = json.dumps(value, separators=(",", ":"))
    else:
        text = str(value)
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def relative(moment: str | None, now: datetime | None = None) -> str:
    """'2026-11-22T13:00:05.000Z' → '13:00:05 (in 42s)' for people reading a table."""
    if not moment:
        return "-"
    when = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    now = now or datetime.now(UTC)
    seconds = (when - now).total_seconds()
    span = _span(abs(seconds))
    label = f"in {span}" if seconds >= 0 else f"{span} ago"
    stamp = when.strftime("%H:%M:%S") if abs(seconds) < 86400 else when.strftime("%Y-%m-%d %H:%M:%S")
    return f"{stamp} ({label})"


def _span(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def schedule_text(schedule: dict[str, Any]) -> str:
    for kind in ("cron", "rate", "at"):
        if schedule.get(kind):
            zone = schedule.get("timezone")
            suffix = f" {zone}" if zone and zone != "UTC" and kind != "at" else ""
            if schedule.get("calendar"):
                suffix += f", calendar {schedule['calendar']} ({schedule.get('on_excluded') or 'skip'})"
            return f"{kind} {schedule[kind]}{suffix}"
    return "-"


def target_text(target: dict[str, Any]) -> str:
    kind = target.get("type")
    detail = target.get("url") or target.get("function") or target.get("queue_url") or target.get("topic_arn")
    if kind == "eventbridge":
        detail = target.get("bus", "default")
    return f"{kind} {detail}"
