"""The ``punctual`` command line: a client for the API, and the local stack.

Exit codes: 0 success; 1 the API refused the request (4xx); 2 bad usage; 3 not found; 4 conflict with
the job's state (409); 5 the API could not be reached or failed (5xx).
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import click

from punctual.client import CONFIG_PATH, ApiError, Client, Config, ConfigError, ConnectionFailed
from punctual.local.env import DEFAULT_TOKEN, parse_tokens
from punctual.output import emit_json, fields, relative, schedule_text, table, target_text

F = TypeVar("F", bound=Callable[..., Any])

EXIT_REFUSED, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_CONFLICT, EXIT_UNAVAILABLE = 1, 2, 3, 4, 5

_RELATIVE = re.compile(r"^in\s+(\d+)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hours?|d|days?)$", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_when(text: str, now: datetime | None = None) -> str:
    """``"in 30s"`` / ``"in 5 minutes"`` → an ISO time; anything else goes to the API as written."""
    match = _RELATIVE.match(text.strip())
    if not match:
        return text
    amount, unit = int(match.group(1)), match.group(2)[0].lower()
    moment = (now or datetime.now(UTC)) + timedelta(**{_UNITS[unit]: amount})
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _require_free_port(port: int) -> None:
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            click.echo(f"error: port {port} is in use; choose another with --port or PUNCTUAL_PORT", err=True)
            sys.exit(EXIT_USAGE)


def _provision_or_exit(provision: Callable[[Any], Any], settings: Any) -> Any:
    """Create the table and queues in the emulator, or say in one line why it cannot be reached."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return provision(settings)
    except (BotoCoreError, ClientError) as error:
        click.echo(f"error: cannot use the AWS endpoint {settings.aws_endpoint_url}: {error}", err=True)
        sys.exit(EXIT_UNAVAILABLE)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


class Context:
    def __init__(self, endpoint: str | None, token: str | None, as_json: bool) -> None:
        self.config = Config.load(endpoint, token)
        self.client = Client(self.config)
        self.as_json = as_json


def api_command(function: F) -> F:
    """Adds --endpoint/--token/--json, builds the client, and turns API errors into one line + exit code."""

    @click.option("--endpoint", envvar="PUNCTUAL_ENDPOINT", help="API URL (default: the local stack).")
    @click.option("--token", envvar="PUNCTUAL_TOKEN", help="Bearer token (local stack).")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON, for scripts.")
    @functools.wraps(function)
    def wrapper(endpoint: str | None, token: str | None, as_json: bool, **kwargs: Any) -> Any:
        try:
            ctx = Context(endpoint, token, as_json)
        except ConfigError as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(EXIT_USAGE)
        try:
            return function(ctx, **kwargs)
        except ApiError as error:
            click.echo(f"error: {error}", err=True)
            code = {404: EXIT_NOT_FOUND, 409: EXIT_CONFLICT}.get(error.status, EXIT_REFUSED)
            sys.exit(EXIT_UNAVAILABLE if error.status >= 500 else code)
        except ConnectionFailed as error:
            click.echo(f"error: {error}", err=True)
            sys.exit(EXIT_UNAVAILABLE)

    return wrapper  # type: ignore[return-value]


@click.group()
@click.version_option(package_name="punctual")
def main() -> None:
    """Punctual: jobs that fire at their second.

    Talks to the local stack by default (http://127.0.0.1:8000, token local-dev-token); set
    PUNCTUAL_ENDPOINT or run `punctual config from-stack` for a deployed one.
    """


# ------------------------------------------------------------------------------------------- jobs


@main.group()
def jobs() -> None:
    """Create, inspect and control jobs."""


def _key_values(pairs: tuple[str, ...], separator: str, option: str) -> dict[str, str]:
    result = {}
    for pair in pairs:
        key, sep, value = pair.partition(separator)
        if not sep or not key:
            raise click.BadParameter(f"{pair!r} is not KEY{separator}VALUE", param_hint=option)
        result[key.strip()] = value.strip()
    return result


def _payload(raw: str | None) -> Any:
    if raw is None:
        return None
    try:
        text = Path(raw[1:]).read_text() if raw.startswith("@") else raw
    except OSError as error:
        raise click.BadParameter(
            f"cannot read {raw[1:]}: {error.strerror}", param_hint="--payload"
        ) from error
    try:
        return json.loads(text)
    except ValueError as error:
        raise click.BadParameter(f"not JSON: {error}", param_hint="--payload") from error


@jobs.command("create")
@click.option("--name", help="Unique among your live jobs.")
@click.option("--at", "at_", help='One-off: "in 30s", "in 5m", or "2026-11-22T13:00:05+01:00".')
@click.option("--cron", help='"0 13 * * 1-5", "*/10 * * * * *" or "cron(0 13 ? * MON-FRI *)".')
@click.option("--rate", help='"5 minutes", "rate(1 hour)".')
@click.option("--timezone", "tz", help="IANA time zone for cron and naive times (default UTC).")
@click.option("--start-at")
@click.option("--end-at")
@click.option("--misfire", type=click.Choice(["run_once", "skip", "run_all"]))
@click.option("--catchup-seconds", type=int)
@click.option("--overlap", type=click.Choice(["allow", "skip"]))
@click.option("--url", help="HTTP target URL.")
@click.option("--method", default=None, help="HTTP method (default POST).")
@click.option("--header", "headers", multiple=True, help="HTTP header 'Name: value' (repeatable).")
@click.option("--lambda", "lambda_", help="Lambda function name or ARN.")
@click.option("--sqs", help="SQS queue URL.")
@click.option("--sns", help="SNS topic ARN.")
@click.option("--eventbridge", help="EventBridge bus name or ARN.")
@click.option("--source", help="EventBridge source.")
@click.option("--detail-type", help="EventBridge detail-type.")
@click.option("--payload", help="JSON, or @file.json.")
@click.option("--max-attempts", type=int)
@click.option("--backoff", type=float, help="Base backoff seconds.")
@click.option("--max-backoff", type=float)
@click.option("--timeout", type=int, help="Seconds an attempt may take.")
@click.option("--tag", "tags", multiple=True, help="KEY=VALUE (repeatable).")
@click.option("--signing-secret", help="Sign deliveries with HMAC-SHA256 (Punctual-Signature).")
@click.option("--idempotency-key", help="Retrying with the same key returns the first job.")
@api_command
def jobs_create(ctx: Context, **options: Any) -> None:
    """Schedule a job."""
    forms = [form for form in ("at_", "cron", "rate") if options[form]]
    if len(forms) != 1:
        raise click.UsageError("give exactly one of --at, --cron, --rate")
    targets = [t for t in ("url", "lambda_", "sqs", "sns", "eventbridge") if options[t]]
    if len(targets) != 1:
        raise click.UsageError("give exactly one target: --url, --lambda, --sqs, --sns or --eventbridge")
    schedule: dict[str, Any] = {}
    if options["at_"]:
        schedule["at"] = parse_when(options["at_"])
        if options["idempotency_key"] and schedule["at"] != options["at_"]:
            # A retry must send the same request: resolve "in 5m" once per key.
            schedule["at"] = _remembered_time(ctx.config.endpoint, options["idempotency_key"], schedule["at"])
    for key, option in (
        ("cron", "cron"),
        ("rate", "rate"),
        ("timezone", "tz"),
        ("start_at", "start_at"),
        ("end_at", "end_at"),
        ("misfire", "misfire"),
        ("catchup_seconds", "catchup_seconds"),
        ("overlap", "overlap"),
    ):
        if options[option] is not None:
            schedule[key] = options[option]
    target: dict[str, Any]
    if options["url"]:
        target = {"type": "http", "url": options["url"]}
        if options["method"]:
            target["method"] = options["method"].upper()
        if options["headers"]:
            target["headers"] = _key_values(options["headers"], ":", "--header")
    elif options["lambda_"]:
        target = {"type": "lambda", "function": options["lambda_"]}
    elif options["sqs"]:
        target = {"type": "sqs", "queue_url": options["sqs"]}
    elif options["sns"]:
        target = {"type": "sns", "topic_arn": options["sns"]}
    else:
        target = {"type": "eventbridge", "bus": options["eventbridge"]}
        for key in ("source", "detail_type"):
            if options[key]:
                target[key] = options[key]
    body: dict[str, Any] = {"schedule": schedule, "target": target}
    if options["name"]:
        body["name"] = options["name"]
    if options["payload"] is not None:
        body["payload"] = _payload(options["payload"])
    retry = {
        k: v
        for k, v in (
            ("max_attempts", options["max_attempts"]),
            ("backoff_seconds", options["backoff"]),
            ("max_backoff_seconds", options["max_backoff"]),
        )
        if v is not None
    }
    if retry:
        body["retry"] = retry
    if options["timeout"] is not None:
        body["timeout_seconds"] = options["timeout"]
    if options["tags"]:
        body["tags"] = _key_values(options["tags"], "=", "--tag")
    if options["signing_secret"]:
        body["signing_secret"] = options["signing_secret"]
    job = ctx.client.create_job(body, options["idempotency_key"])
    _show_job(ctx, job)


def _remembered_time(endpoint: str, key: str, resolved: str) -> str:
    """The time a relative --at resolved to the first time this Idempotency-Key was used (24 h)."""
    path = CONFIG_PATH.parent / "idempotency.json"
    try:
        memory: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        memory = {}
    now = time.time()
    memory = {k: v for k, v in memory.items() if isinstance(v, dict) and now - v.get("saved", 0) < 86400}
    entry = memory.setdefault(f"{endpoint}|{key}", {"at": resolved, "saved": now})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(memory))
    except OSError:
        pass  # without a place to remember, a retry is refused by the API, which says why
    return str(entry["at"])


def _pages(fetch: Callable[[str | None], Any], everything: bool) -> Iterator[Any]:
    cursor = None
    while True:
        page = fetch(cursor)
        yield page
        cursor = page.get("next_cursor")
        if not everything or not cursor:
            return


@jobs.command("list")
@click.option("--status", type=click.Choice(["ACTIVE", "PAUSED", "COMPLETED", "FAILED", "CANCELLED"]))
@click.option("--name")
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True)
@click.option("--cursor", help="Continue from a previous page.")
@click.option("--all", "everything", is_flag=True, help="Follow every page.")
@api_command
def jobs_list(
    ctx: Context, status: str | None, name: str | None, limit: int, cursor: str | None, everything: bool
) -> None:
    """Your jobs, newest first."""
    items: list[Any] = []
    next_cursor = None
    for page in _pages(
        lambda c: ctx.client.list_jobs(limit=limit, cursor=c or cursor, status=status, name=name), everything
    ):
        items.extend(page["items"])
        next_cursor = page["next_cursor"]
    if ctx.as_json:
        emit_json({"items": items, "next_cursor": next_cursor})
        return
    rows = [
        [
            job["job_id"],
            job["name"],
            job["status"],
            schedule_text(job["schedule"]),
            relative(job["next_run_at"]),
            (job.get("last_run") or {}).get("status"),
        ]
        for job in items
    ]
    click.echo(table(rows, ["job id", "name", "status", "schedule", "next run", "last run"]))
    if next_cursor:
        click.echo(f"\nmore: --cursor {next_cursor}  (or --all)")


def _show_job(ctx: Context, job: dict[str, Any]) -> None:
    if ctx.as_json:
        emit_json(job)
        return
    last = job.get("last_run") or {}
    click.echo(
        fields(
            [
                ("job id", job["job_id"]),
                ("name", job["name"]),
                ("status", job["status"]),
                ("schedule", schedule_text(job["schedule"])),
                ("target", target_text(job["target"])),
                ("next run", relative(job["next_run_at"])),
                ("upcoming", ", ".join(u.replace(".000Z", "Z") for u in job["upcoming"]) or "-"),
                (
                    "last run",
                    f"{last.get('status')} {last.get('scheduled_for')} lateness {last.get('lateness_ms')} ms"
                    if last
                    else "-",
                ),
                ("runs", job["run_counts"]),
                ("retry", job["retry"]),
                ("tags", job["tags"]),
                ("created", job["created_at"]),
            ]
        )
    )


@jobs.command("get")
@click.argument("job_id")
@api_command
def jobs_get(ctx: Context, job_id: str) -> None:
    """One job: status, schedule, next five fire times, last run."""
    _show_job(ctx, ctx.client.get_job(job_id))


def _job_action(action: str, help_text: str) -> None:
    @jobs.command(action, help=help_text)
    @click.argument("job_id")
    @api_command
    def command(ctx: Context, job_id: str) -> None:
        if action == "cancel":
            result = ctx.client.cancel_job(job_id)
        else:
            result = ctx.client.job_action(job_id, action)
        if action == "run":
            _show_run(ctx, result)
        else:
            _show_job(ctx, result)


_job_action("pause", "Stop firing until resumed.")
_job_action("resume", "Fire again; the misfire policy decides about what was missed.")
_job_action("run", "Run once, now (also while paused).")
_job_action("cancel", "Cancel: no further runs; the history is kept.")


def _run_rows(runs: list[dict[str, Any]]) -> list[list[Any]]:
    return [
        [
            run["run_id"],
            run["status"],
            run["scheduled_for"],
            run["lateness_ms"],
            run["attempt"],
            run.get("error"),
        ]
        for run in runs
    ]


RUN_HEADERS = ["run id", "status", "scheduled for", "lateness ms", "attempts", "error"]


@jobs.command("runs")
@click.argument("job_id")
@click.option(
    "--status",
    type=click.Choice(
        ["SCHEDULED", "QUEUED", "RUNNING", "SUCCEEDED", "RETRYING", "FAILED", "CANCELLED", "SKIPPED"]
    ),
)
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True)
@click.option("--cursor")
@click.option("--all", "everything", is_flag=True)
@api_command
def jobs_runs(
    ctx: Context, job_id: str, status: str | None, limit: int, cursor: str | None, everything: bool
) -> None:
    """A job's execution history, newest first."""
    items: list[Any] = []
    next_cursor = None
    for page in _pages(
        lambda c: ctx.client.list_runs(job_id, limit=limit, cursor=c or cursor, status=status), everything
    ):
        items.extend(page["items"])
        next_cursor = page["next_cursor"]
    if ctx.as_json:
        emit_json({"items": items, "next_cursor": next_cursor})
        return
    click.echo(table(_run_rows(items), RUN_HEADERS))
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
                click.echo(table(_run_rows(runs), RUN_HEADERS))
            count += 1
            if iterations and count >= iterations:
                return
            time.sleep(interval)
    except KeyboardInterrupt:
        pass


# ------------------------------------------------------------------------------------------- runs


@main.group()
def runs() -> None:
    """Inspect and cancel single runs."""


def _show_run(ctx: Context, run: dict[str, Any]) -> None:
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
    _show_run(ctx, ctx.client.get_run(job_id, run_id))


@runs.command("cancel")
@click.argument("job_id")
@click.argument("run_id")
@api_command
def runs_cancel(ctx: Context, job_id: str, run_id: str) -> None:
    """Cancel a run that has not finished."""
    _show_run(ctx, ctx.client.cancel_run(job_id, run_id))


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


# ----------------------------------------------------------------------------------------- config


@main.group()
def config() -> None:
    """Where the CLI sends requests."""


@config.command("from-stack")
@click.option("--stack-name", default=None, help="Default: the one deployed stack named punctual-<stage>.")
@click.option("--region", default=None)
@click.option("--output-key", default="ApiUrl", show_default=True)
def config_from_stack(stack_name: str | None, region: str | None, output_key: str) -> None:
    """Read the deployed API URL from the CloudFormation stack outputs and save it."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    session = boto3.session.Session(region_name=region)
    client = session.client("cloudformation")
    try:
        if stack_name is not None:
            stacks = client.describe_stacks(StackName=stack_name)["Stacks"]
        else:
            stacks = [
                stack
                for page in client.get_paginator("describe_stacks").paginate()
                for stack in page["Stacks"]
                if stack["StackName"].lower().startswith("punctual")
                and any(o["OutputKey"].startswith(output_key) for o in stack.get("Outputs", []))
            ]
    except ClientError as error:
        missing = "does not exist" in str(error)
        click.echo(f"error: cannot read stack {stack_name}: {error}", err=True)
        sys.exit(EXIT_NOT_FOUND if missing else EXIT_UNAVAILABLE)
    except BotoCoreError as error:
        click.echo(f"error: cannot read CloudFormation stacks: {error}", err=True)
        sys.exit(EXIT_UNAVAILABLE)
    if not stacks:
        click.echo(
            "error: no Punctual stack found here; deploy one (make deploy) or pass --stack-name", err=True
        )
        sys.exit(EXIT_NOT_FOUND)
    if len(stacks) > 1:
        names = ", ".join(stack["StackName"] for stack in stacks)
        click.echo(f"error: several Punctual stacks ({names}); choose one with --stack-name", err=True)
        sys.exit(EXIT_USAGE)
    stack = stacks[0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    url = outputs.get(output_key) or next((v for k, v in outputs.items() if k.startswith(output_key)), None)
    if not url:
        click.echo(
            f"error: stack {stack['StackName']} has no output {output_key} (outputs: {', '.join(outputs)})",
            err=True,
        )
        sys.exit(EXIT_NOT_FOUND)
    saved = Config(endpoint=url.rstrip("/"), auth="sigv4", region=session.region_name).save()
    click.echo(
        f"endpoint {url} of {stack['StackName']} (SigV4, region {session.region_name}) saved to {saved}"
    )


@config.command("show")
@click.option("--endpoint", envvar="PUNCTUAL_ENDPOINT")
@click.option("--token", envvar="PUNCTUAL_TOKEN")
def config_show(endpoint: str | None, token: str | None) -> None:
    """The endpoint and authentication the other commands would use."""
    try:
        resolved = Config.load(endpoint, token)
    except ConfigError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(EXIT_USAGE)
    click.echo(
        fields([("endpoint", resolved.endpoint), ("auth", resolved.auth), ("region", resolved.region)])
    )


# ------------------------------------------------------------------------------------------ local


@main.command()
@click.option(
    "--port", type=int, default=lambda: int(os.environ.get("PUNCTUAL_PORT", "8000")), show_default="8000"
)
@click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True, help="Worker processes.")
@click.option(
    "--aws-endpoint",
    default=None,
    help="Use this emulator (moto server, LocalStack) instead of an embedded one.",
)
@click.option(
    "--role", type=click.Choice(["api", "dispatcher", "worker"]), default=None, help="Run one role alone."
)
@click.option("--tick-seconds", type=float, default=60.0, show_default=True, help="Dispatcher tick interval.")
@click.option("--shards", type=click.IntRange(1, 1000), default=4, show_default=True, help="Trigger shards.")
@click.option("--lookahead-seconds", type=click.IntRange(60, 840), default=120, show_default=True)
@click.option(
    "--demo", is_flag=True, help="Also start a webhook receiver, schedule a few jobs and show deliveries."
)
def local(
    port: int,
    workers: int,
    aws_endpoint: str | None,
    role: str | None,
    tick_seconds: float,
    shards: int,
    lookahead_seconds: int,
    demo: bool,
) -> None:
    """Run the whole stack locally on an embedded AWS emulator."""
    from punctual.local.supervisor import LocalStack

    overrides: dict[str, object] = {"shard_count": shards, "lookahead_seconds": lookahead_seconds}
    if role is not None:
        if aws_endpoint is None:
            raise click.UsageError("--role needs --aws-endpoint (the emulator the other roles use)")
        from punctual.local.env import LOCAL_CREDENTIALS, local_settings
        from punctual.local.provision import provision
        from punctual.local.role import main as role_main

        for key, value in LOCAL_CREDENTIALS.items():
            os.environ.setdefault(key, value)
        if role == "api":
            _require_free_port(port)
        settings = _provision_or_exit(provision, local_settings(aws_endpoint, overrides=overrides))
        os.environ.update(settings.to_env())
        where = f" on http://127.0.0.1:{port}" if role == "api" else ""
        detail = f", every {tick_seconds:g}s" if role == "dispatcher" else ""
        click.echo(
            f"  punctual {role}{where}{detail}, against {aws_endpoint}"
            f" (table {settings.table_name}); Ctrl-C stops it",
            err=True,
        )
        role_main([role, "--port", str(port), "--tick-seconds", str(tick_seconds)])
        return
    try:
        tokens = parse_tokens(os.environ.get("PUNCTUAL_TOKENS"))
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    _require_free_port(port)
    if aws_endpoint is not None:
        from punctual.local.env import local_settings
        from punctual.local.provision import provision

        _provision_or_exit(provision, local_settings(aws_endpoint, overrides=overrides))
    # `kill` and service managers stop with SIGTERM: shut down as cleanly as on Ctrl-C.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)  # even when started in the background with SIGINT ignored
    stack = LocalStack(
        port=port,
        workers=workers,
        aws_endpoint=aws_endpoint,
        tick_seconds=tick_seconds,
        settings_overrides=overrides,
    )
    try:
        settings = stack.start()
        token = next(iter(tokens)) if os.environ.get("PUNCTUAL_TOKENS") else DEFAULT_TOKEN
        base = f"http://127.0.0.1:{port}"
        click.echo(
            "\n".join(
                [
                    "",
                    f"  Punctual is running at {base}",
                    f"  token:      {token}   (Authorization: Bearer {token})",
                    f"  API docs:   {base}/docs   (OpenAPI: {base}/openapi.json)",
                    f"  emulator:   {settings.aws_endpoint_url}  (table {settings.table_name})",
                    f"  dispatcher: every {tick_seconds:g}s, look-ahead {settings.lookahead_seconds}s;"
                    f" workers: {workers}",
                    "  try:       punctual jobs create --at 'in 10s' --url http://127.0.0.1:"
                    f"{port}/v1/health --method GET",
                    "  Ctrl-C stops everything.",
                    "",
                ]
            ),
            err=True,
        )
        if demo:
            from punctual.local.demo import run_demo

            run_demo(base, token, stack)
        else:
            stack.supervise()
    except KeyboardInterrupt:
        click.echo("\npunctual: stopping", err=True)
    finally:
        stack.stop()
    sys.exit(0)
