"""``punctual jobs changes``, ``version``, ``compare`` and ``restore``: a job's audit trail, attached to
the ``jobs`` group (docs/api.md, "The audit trail")."""

from __future__ import annotations

import json
from typing import Any

import click

from punctual.cli.common import Context, api_command, collect
from punctual.cli.jobs import jobs, show_job
from punctual.output import emit_json, table

CHANGE_HEADERS = ["REVISION", "AT", "ACTION", "BY", "NOTE", "CHANGED"]


def _changed(change: dict[str, Any]) -> str:
    """What a change changed, in one cell: its fields, or what the action did."""
    if change["diff"]:
        return ", ".join(change["diff"])
    return ", ".join(f"{key} {value}" for key, value in change["details"].items())


@jobs.command("changes")
@click.argument("job_id")
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True)
@click.option("--cursor")
@click.option("--all", "everything", is_flag=True)
@api_command
def jobs_changes(ctx: Context, job_id: str, limit: int, cursor: str | None, everything: bool) -> None:
    """A job's audit trail, newest first: every change, who made it, when, why, and what changed
    (--json for each field's before and after)."""
    items, next_cursor = collect(
        lambda c: ctx.client.list_changes(job_id, limit=limit, cursor=c or cursor), everything
    )
    if ctx.as_json:
        emit_json({"items": items, "next_cursor": next_cursor})
        return
    rows = [[str(c["revision"]), c["at"], c["action"], c["by"], c["note"] or "", _changed(c)] for c in items]
    click.echo(table(rows, CHANGE_HEADERS))
    if next_cursor:
        click.echo(f"\nmore: --cursor {next_cursor}  (or --all)")


@jobs.command("version")
@click.argument("job_id")
@click.argument("revision", type=click.IntRange(1))
@api_command
def jobs_version(ctx: Context, job_id: str, revision: int) -> None:
    """The job's definition at REVISION, as JSON."""
    version = ctx.client.get_version(job_id, revision)
    emit_json(version if ctx.as_json else version["definition"])


@jobs.command("compare")
@click.argument("job_id")
@click.argument("first", type=click.IntRange(1))
@click.argument("second", type=click.IntRange(1))
@api_command
def jobs_compare(ctx: Context, job_id: str, first: int, second: int) -> None:
    """What differs between revisions FIRST and SECOND: a line a field, its value at each."""
    compared = ctx.client.compare_versions(job_id, first, second)
    if ctx.as_json:
        emit_json(compared)
        return
    rows = [[field, json.dumps(old), json.dumps(new)] for field, (old, new) in compared["diff"].items()]
    click.echo(table(rows, ["FIELD", f"REVISION {first}", f"REVISION {second}"]))


@jobs.command("restore")
@click.argument("job_id")
@click.argument("revision", type=click.IntRange(1))
@click.option("--note", help="Why: kept with the change in the audit trail (up to 500 characters).")
@api_command
def jobs_restore(ctx: Context, job_id: str, revision: int, note: str | None) -> None:
    """Make REVISION's definition the job's again (a new revision; its status and signing secret
    stay as they are)."""
    show_job(ctx, ctx.client.restore_job(job_id, revision, note))
