"""``punctual stats``: job and run counts, queue and DLQ depth, dispatcher lag."""

from __future__ import annotations

import click

from punctual.cli.common import Context, api_command, main
from punctual.output import emit_json, fields


@main.command("stats")
@api_command
def stats(ctx: Context) -> None:
    """Your job and run counts, queue depth, DLQ depth and dispatcher lag."""
    data = ctx.client.stats()
    if ctx.as_json:
        emit_json(data)
        return
    queue = data["queue"]
    click.echo(
        fields(
            [
                ("jobs", ", ".join(f"{k} {v}" for k, v in sorted(data["jobs"].items())) or "none"),
                ("runs", ", ".join(f"{k} {v}" for k, v in sorted(data["runs"].items())) or "none"),
                (
                    "queue",
                    f"{queue['queued']} queued, {queue['delayed']} delayed, {queue['in_flight']} in flight",
                ),
                ("dlq", queue["dlq"]),
                (
                    "dispatcher lag",
                    f"{data['dispatcher_lag_seconds']:.0f} s"
                    if data["dispatcher_lag_seconds"] is not None
                    else "-",
                ),
            ]
        )
    )
