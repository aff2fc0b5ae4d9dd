"""``punctual runs``: one run with its attempts, cancelling a run; how runs are shown (also by ``jobs``)."""

from __future__ import annotations

from typing import Any

import click

from punctual.cli.common import Context, api_command, main
from punctual.output import emit_json, fields


@main.group()
def runs() -> None:
    """Inspect and cancel single runs."""


def run_rows(runs: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            run["run_id"],
            run["status"],
            run["scheduled_for"],
            run["lateness_ms"],
            run["attempt"],
            _why(run),
        ]
        for run in runs
    ]


def _why(run: dict[str, Any]) -> str | None:
    """The error, and for a row standing for several occurrences how many and, for a pause, why; for a
    run waiting behind another (a buffering overlap policy), which."""
    text = run.get("error")
    if run.get("status") == "QUEUED" and run.get("overlap_with"):
        text = f"waits behind run {run['overlap_with']} (overlap)"
    if run.get("reason") == "limited" and run.get("limited_by"):
        text = f"waits on limit {run['limited_by']}"
    if run.get("covers", 1) != 1:
        text = f"{text} ({run['covers']} occurrences)"
    if run.get("note"):
        text = f"{text}: {run['note']}"
    return text


RUN_HEADERS = ["run id", "status", "scheduled for", "lateness ms", "attempts", "error"]


def show_run(ctx: Context, run: dict[str, Any]) -> None:
    if ctx.as_json:
        emit_json(run)
        return
    click.echo(
        fields(
            [
                (key.replace("_", " "), run.get(key))
                for key in (
                    "run_id",
                    "job_id",
                    "status",
                    "kind",
                    "scheduled_for",
                    "started_at",
                    "finished_at",
                    "lateness_ms",
                    "limited_by",
                    "limited_ms",
                    "attempt",
                    "executions",
                    "next_attempt_at",
                    "error",
                )
            ]
        )
    )
    for attempt in run.get("attempts") or []:
        click.echo(
            f"  attempt {attempt['attempt']}: {attempt['outcome']}  {attempt['duration_ms']} ms"
            f"  status {attempt['status_code'] or '-'}  {attempt['error'] or ''}".rstrip()
        )


@runs.command("get")
@click.argument("job_id")
@click.argument("run_id")
@api_command
def runs_get(ctx: Context, job_id: str, run_id: str) -> None:
    """One run with its attempts."""
    show_run(ctx, ctx.client.get_run(job_id, run_id))


@runs.command("cancel")
@click.argument("job_id")
@click.argument("run_id")
@api_command
def runs_cancel(ctx: Context, job_id: str, run_id: str) -> None:
    """Cancel a run that has not finished."""
    show_run(ctx, ctx.client.cancel_run(job_id, run_id))
