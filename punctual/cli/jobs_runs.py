"""``punctual jobs runs`` and ``punctual jobs watch``: a job's history and a live view of it, attached
to the ``jobs`` group."""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime

import click

from punctual.cli.common import Context, api_command, choice, collect
from punctual.cli.jobs import jobs
from punctual.cli.runs import RUN_HEADERS, run_rows
from punctual.output import emit_json, relative, schedule_text, table
from punctual_functions.core.model import Reason, RunStatus


@jobs.command("runs")
@click.argument("job_id")
@click.option(
    "--status",
    type=choice(RunStatus),
)
@click.option(
    "--reason",
    type=choice(Reason),
    help="Only the occurrences that did not run, for this reason.",
)
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True)
@click.option("--cursor")
@click.option("--all", "everything", is_flag=True)
@api_command
def jobs_runs(
    ctx: Context,
    job_id: str,
    status: str | None,
    reason: str | None,
    limit: int,
    cursor: str | None,
    everything: bool,
) -> None:
    """A job's execution history, newest first: every run, and a row for every occurrence that did
    not run (skipped by overlap or misfire, not run while paused, cancelled) with its reason."""
    items, next_cursor = collect(
        lambda c: ctx.client.list_runs(job_id, limit=limit, cursor=c or cursor, status=status, reason=reason),
        everything,
    )
    if ctx.as_json:
        emit_json({"items": items, "next_cursor": next_cursor})
        return
    click.echo(table(run_rows(items), RUN_HEADERS))
    if next_cursor:
        click.echo(f"\nmore: --cursor {next_cursor}  (or --all)")


@jobs.command("watch")
@click.argument("job_id")
@click.option("--interval", type=float, default=2.0, show_default=True)
@click.option("--iterations", type=int, default=0, help="Stop after this many refreshes (0: until Ctrl-C).")
@api_command
def jobs_watch(ctx: Context, job_id: str, interval: float, iterations: int) -> None:
    """A live view of a job's upcoming and recent runs (Ctrl-C to leave)."""
    count = 0
    try:
        while True:
            job = ctx.client.get_job(job_id)
            # The history also holds runs queued ahead of time (the look-ahead): "recent" means due.
            now = datetime.now(UTC)
            runs = [
                run
                for run in ctx.client.list_runs(job_id, limit=40)["items"]
                if datetime.fromisoformat(run["scheduled_for"].replace("Z", "+00:00")) <= now
            ][:10]
            if not ctx.as_json and sys.stdout.isatty():
                click.clear()
            if ctx.as_json:
                emit_json({"job": job, "runs": runs})
            else:
                click.echo(
                    f"{job['job_id']}  {job['name'] or ''}  {job['status']}  {schedule_text(job['schedule'])}"
                )
                click.echo(f"updated {datetime.now(UTC).strftime('%H:%M:%S')} UTC\n")
                click.echo("upcoming")
                for moment in job["upcoming"] or []:
                    click.echo(f"  {relative(moment)}")
                click.echo("\nrecent runs")
                click.echo(table(run_rows(runs), RUN_HEADERS))
            count += 1
            if iterations and count >= iterations:
                return
            time.sleep(interval)
    except KeyboardInterrupt:
        pass
