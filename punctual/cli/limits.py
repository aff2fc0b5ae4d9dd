"""``punctual limits``: target limits (docs/cli.md, "punctual limits"): create, list with each one's
current use and the runs waiting on it, get, update (a whole replace), delete."""

from __future__ import annotations

from typing import Any

import click

from punctual.cli.common import Context, api_command, main
from punctual.output import emit_json, fields, table


@main.group()
def limits() -> None:
    """Cap how hard your jobs call a target: attempts at once, calls per second."""


def _spec_options(function: Any) -> Any:
    for option in reversed(
        [
            click.option(
                "--match",
                required=True,
                help="The targets it covers: a URL prefix (https://api.example.com/v1) or an ARN "
                "(a prefix ends in *).",
            ),
            click.option(
                "--max-concurrent",
                type=click.IntRange(1, 1000),
                help="Attempts in flight at once, across all workers.",
            ),
            click.option("--per-second", type=float, help="Calls started per second (a token bucket)."),
            click.option(
                "--burst", type=click.IntRange(1, 10000), help="With --per-second: the bucket's size."
            ),
        ]
    ):
        function = option(function)
    return function


def _body(options: dict[str, Any]) -> dict[str, Any]:
    if options["max_concurrent"] is None and options["per_second"] is None:
        raise click.UsageError("give --max-concurrent, --per-second or both")
    body: dict[str, Any] = {"match": options["match"]}
    for key in ("max_concurrent", "per_second", "burst"):
        if options[key] is not None:
            body[key] = options[key]
    return body


def _cap(limit: dict[str, Any]) -> str:
    parts = []
    if limit.get("max_concurrent") is not None:
        parts.append(f"{limit['max_concurrent']} at once")
    if limit.get("per_second") is not None:
        burst = f", burst {limit['burst']}" if limit.get("burst") is not None else ""
        parts.append(f"{limit['per_second']:g}/s{burst}")
    return ", ".join(parts)


def _use(limit: dict[str, Any]) -> str:
    held = f"{limit['in_use']}/{limit['max_concurrent']}" if limit.get("max_concurrent") is not None else "-"
    tokens = f", {limit['tokens']:g} tokens" if limit.get("tokens") is not None else ""
    return held + tokens


def show_limit(ctx: Context, limit: dict[str, Any]) -> None:
    if ctx.as_json:
        emit_json(limit)
        return
    click.echo(
        fields(
            [
                ("name", limit["name"]),
                ("match", limit["match"]),
                ("caps", _cap(limit)),
                ("in use", _use(limit)),
                ("waiting", limit["waiting_count"]),
                ("version", limit["version"]),
                ("updated", limit["updated_at"]),
            ]
        )
    )
    if limit["running"]:
        click.echo("\nrunning:")
        rows = [
            [slot["job_id"], slot["run_id"], slot["taken_at"], slot["lease_until"]]
            for slot in limit["running"]
        ]
        click.echo(table(rows, ["job id", "run id", "since", "lease until"]))
    if limit["waiting"]:
        click.echo("\nwaiting:")
        rows = [[w["job_id"], w["run_id"], w["since"], w["waited_ms"]] for w in limit["waiting"]]
        click.echo(table(rows, ["job id", "run id", "since", "waited ms"]))


@limits.command("create")
@click.argument("name")
@_spec_options
@api_command
def limits_create(ctx: Context, name: str, **options: Any) -> None:
    """Create a limit NAME (it applies within seconds, on every worker)."""
    show_limit(ctx, ctx.client.create_limit({"name": name, **_body(options)}))


@limits.command("list")
@api_command
def limits_list(ctx: Context) -> None:
    """Your limits, each with its current use and how many runs wait on it."""
    page = ctx.client.list_limits()
    if ctx.as_json:
        emit_json(page)
        return
    rows = [
        [limit["name"], limit["match"], _cap(limit), _use(limit), limit["waiting_count"]]
        for limit in page["items"]
    ]
    click.echo(table(rows, ["name", "match", "caps", "in use", "waiting"]) if rows else "no limits")


@limits.command("get")
@click.argument("name")
@api_command
def limits_get(ctx: Context, name: str) -> None:
    """One limit: the runs holding its slots and those waiting on it."""
    show_limit(ctx, ctx.client.get_limit(name))


@limits.command("update")
@click.argument("name")
@_spec_options
@click.option("--version", type=int, help="Replace only this version (else: whichever is there).")
@api_command
def limits_update(ctx: Context, name: str, **options: Any) -> None:
    """Replace limit NAME as a whole (options left out are removed)."""
    body = _body(options)
    if options["version"] is not None:
        body["version"] = options["version"]
    show_limit(ctx, ctx.client.replace_limit(name, body))


@limits.command("delete")
@click.argument("name")
@api_command
def limits_delete(ctx: Context, name: str) -> None:
    """Delete limit NAME: the runs waiting on it start within seconds."""
    show_limit(ctx, ctx.client.delete_limit(name))
