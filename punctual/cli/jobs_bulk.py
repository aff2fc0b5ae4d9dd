"""``punctual jobs bulk`` and ``punctual jobs backfill``: commands that act on many jobs or runs at
once, attached to the ``jobs`` group."""

from __future__ import annotations

import sys
from typing import Any

import click

from punctual.cli.common import EXIT_REFUSED, EXIT_USAGE, Context, api_command, choice, key_values, parse_when
from punctual.cli.jobs import jobs
from punctual.output import emit_json, table
from punctual_functions.core.model import OverlapPolicy


@jobs.command("bulk")
@click.argument("action", type=click.Choice(["pause", "resume", "cancel"]))
@click.option(
    "--tag", "tags", multiple=True, required=True, help="KEY=VALUE: jobs carrying all of them (repeatable)."
)
@click.option("--note", help="pause: why.")
@click.option("--until", help='pause: resume by itself then ("in 2h", or an ISO date-time).')
@click.option("--yes", is_flag=True, help="cancel: confirm cancelling every matching job.")
@api_command
def jobs_bulk(
    ctx: Context, action: str, tags: tuple[str, ...], note: str | None, until: str | None, yes: bool
) -> None:
    """Pause, resume or cancel every job of yours that carries all the --tag pairs, each answered on
    its own, 500 to a request until none is left; exit 1 if any was refused. Cancelling asks for --yes."""
    if action == "cancel" and not yes:
        click.echo("error: cancel ends every matching job for good; add --yes to confirm", err=True)
        sys.exit(EXIT_USAGE)
    body: dict[str, Any] = {"action": action, "tags": key_values(tags, "=", "--tag")}
    if note is not None:
        body["note"] = note
    if until is not None:
        body["until"] = parse_when(until)
    items: list[dict[str, Any]] = []
    while True:
        answer = ctx.client.bulk(body)
        items += answer["items"]
        if not answer.get("next_cursor"):
            break
        body = {**body, "cursor": answer["next_cursor"]}
    refused = [item for item in items if item["status"] >= 400]
    if ctx.as_json:
        emit_json({"action": action, "matched": len(items), "items": items})
    else:
        rows = [
            [
                item["job_id"],
                (item["job"] or {}).get("name"),
                (item["job"] or {}).get("status") or item["status"],
                "ok" if item["job"] else f"{item['error']['field']}: {item['error']['reason']}",
            ]
            for item in items
        ]
        click.echo(table(rows, ["job id", "name", "status", "result"]))
        click.echo(
            f"{action}: {len(items)} matched, {len(items) - len(refused)} done, {len(refused)} refused"
        )
    if refused:
        sys.exit(EXIT_REFUSED)


@jobs.command("backfill")
@click.argument("job_id")
@click.option("--from", "from_", required=True, help="ISO date-time (naive: the schedule's zone).")
@click.option("--to", "to", required=True, help="ISO date-time, not in the future.")
@click.option(
    "--overlap",
    type=choice(OverlapPolicy, OverlapPolicy.BUFFER_ALL, OverlapPolicy.ALLOW),
    default=OverlapPolicy.BUFFER_ALL.value,
    show_default=True,
    help="buffer_all: one after another, oldest first; allow: all at once.",
)
@api_command
def jobs_backfill(ctx: Context, job_id: str, from_: str, to: str, overlap: str) -> None:
    """Run the job's past occurrences between --from and --to (both included) again, as runs of kind
    backfill; at most 1,000 a call. `punctual jobs runs` shows them as they run."""
    answer = ctx.client.backfill(job_id, {"from": from_, "to": to, "overlap": overlap})
    if ctx.as_json:
        emit_json(answer)
        return
    times = answer["occurrences"]
    click.echo(
        f"backfilling {answer['count']} occurrences of {job_id} ({answer['overlap']}): "
        f"{times[0]} .. {times[-1]}"
    )
