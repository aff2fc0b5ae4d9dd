"""``punctual jobs``: create, list, show, pause/resume/run/cancel (a job's runs and the live watch:
``jobs_runs``; commands over many jobs: ``jobs_bulk``)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from punctual.cli.common import (
    EXIT_REFUSED,
    Context,
    api_command,
    choice,
    collect,
    key_values,
    main,
    parse_when,
    read_payload,
    remembered_time,
)
from punctual.cli.runs import show_run
from punctual.output import emit_json, fields, relative, schedule_text, table, target_text
from punctual_functions.core.calendars import OnExcluded
from punctual_functions.core.model import JobStatus, MisfirePolicy, OnComplete, OverlapPolicy


@main.group()
def jobs() -> None:
    """Create, inspect and control jobs."""


@jobs.command("create")
@click.option("--name", help="Unique among your live jobs.")
@click.option("--at", "at_", help='One-off: "in 30s", "in 5m", or "2026-11-22T13:00:05+01:00".')
@click.option("--cron", help='"0 13 * * 1-5", "*/10 * * * * *" or "cron(0 13 ? * MON-FRI *)".')
@click.option("--rate", help='"5 minutes", "rate(1 hour)".')
@click.option("--timezone", "tz", help="IANA time zone for cron and naive times (default UTC).")
@click.option("--start-at")
@click.option("--end-at")
@click.option("--misfire", type=choice(MisfirePolicy))
@click.option("--catchup-seconds", type=int)
@click.option(
    "--overlap",
    type=choice(OverlapPolicy),
    help="An occurrence due while an earlier run is under way (docs/api.md).",
)
@click.option("--calendar", help="Follow one of your business calendars (punctual calendars list).")
@click.option(
    "--on-excluded",
    type=choice(OnExcluded),
    help="With --calendar: skip a fire time on an excluded day (default), or move it to a business day.",
)
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
@click.option("--pause-on-failures", type=int, help="Pause the job after this many consecutive failed runs.")
@click.option(
    "--jitter",
    type=int,
    help="Spread each occurrence by a random delay of up to this many seconds (fixed per occurrence).",
)
@click.option(
    "--max-runs",
    type=click.IntRange(1, 1000),
    help="A recurring job ends after this many of its occurrences were set off.",
)
@click.option(
    "--max-concurrent",
    type=click.IntRange(1, 1000),
    help="At most this many of the job's attempts in flight at once (a limit of its own).",
)
@click.option(
    "--on-complete",
    type=choice(OnComplete),
    help="Once the job ends: keep it (default), or delete it with its history --delete-after-days later.",
)
@click.option(
    "--delete-after-days", type=click.IntRange(1, 365), help="With --on-complete delete (default 7)."
)
@click.option("--alert-url", help="Send the job's alerts to this webhook (signed with --signing-secret).")
@click.option("--alert-sns", help="Send the job's alerts to this SNS topic ARN.")
@click.option(
    "--alert-on",
    "alert_on",
    multiple=True,
    type=click.Choice(["failed", "missed"]),
    help="Alert when a run fails, or when an occurrence is missed (repeatable).",
)
@click.option("--alert-late", type=click.IntRange(1, 86400), help="Alert when a run starts this many s late.")
@click.option(
    "--alert-running", type=click.IntRange(1, 86400), help="Alert when an attempt runs this many s."
)
@click.option(
    "--alert-limited",
    type=click.IntRange(1, 86400),
    help="Alert when a run waits on a target limit this many s.",
)
@click.option(
    "--dead-letter",
    metavar="QUEUE_URL",
    help="Send each failed run, with its error, to this SQS queue (of the deployment's allow-list).",
)
@click.option("--tag", "tags", multiple=True, help="KEY=VALUE (repeatable).")
@click.option("--signing-secret", help="Sign deliveries with HMAC-SHA256 (Punctual-Signature).")
@click.option("--idempotency-key", help="Retrying with the same key returns the first job.")
@click.option(
    "--file",
    "jobs_file",
    type=click.File("r"),
    help="Create many: one job a line (JSON, as the body of POST /v1/jobs; '-' for stdin), 100 a request.",
)
@api_command
def jobs_create(ctx: Context, **options: Any) -> None:
    """Schedule a job, or every job of a JSON Lines file (--file)."""
    if options["jobs_file"] is not None:
        given = [name for name, value in options.items() if value not in (None, (), False)]
        if set(given) - {"jobs_file", "idempotency_key"}:
            raise click.UsageError("--file takes the jobs from the file: give no other job option")
        _create_from_file(ctx, options["jobs_file"], options["idempotency_key"])
        return
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
            schedule["at"] = remembered_time(ctx.config.endpoint, options["idempotency_key"], schedule["at"])
    for key, option in (
        ("cron", "cron"),
        ("rate", "rate"),
        ("timezone", "tz"),
        ("start_at", "start_at"),
        ("end_at", "end_at"),
        ("misfire", "misfire"),
        ("catchup_seconds", "catchup_seconds"),
        ("overlap", "overlap"),
        ("calendar", "calendar"),
        ("on_excluded", "on_excluded"),
    ):
        if options[option] is not None:
            schedule[key] = options[option]
    target: dict[str, Any]
    if options["url"]:
        target = {"type": "http", "url": options["url"]}
        if options["method"]:
            target["method"] = options["method"].upper()
        if options["headers"]:
            target["headers"] = key_values(options["headers"], ":", "--header")
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
        body["payload"] = read_payload(options["payload"])
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
    if options["jitter"] is not None:
        body["jitter_seconds"] = options["jitter"]
    if options["pause_on_failures"] is not None:
        body["pause_on_failures"] = options["pause_on_failures"]
    for key in ("max_runs", "max_concurrent", "on_complete", "delete_after_days"):
        if options[key] is not None:
            body[key] = options[key]
    alerts = _alerts_of(options)
    if alerts is not None:
        body["alerts"] = alerts
    if options["dead_letter"]:
        body["dead_letter"] = {"type": "sqs", "queue_url": options["dead_letter"]}
    if options["tags"]:
        body["tags"] = key_values(options["tags"], "=", "--tag")
    if options["signing_secret"]:
        body["signing_secret"] = options["signing_secret"]
    job = ctx.client.create_job(body, options["idempotency_key"])
    show_job(ctx, job)


def _alerts_of(options: dict[str, Any]) -> dict[str, Any] | None:
    """The body's ``alerts`` from the --alert-* options (None when none is given)."""
    kinds = (
        options["alert_on"]
        or options["alert_late"] is not None
        or options["alert_running"] is not None
        or options["alert_limited"] is not None
    )
    where = [o for o in ("alert_url", "alert_sns") if options[o]]
    if not kinds and not where:
        return None
    if len(where) != 1:
        raise click.UsageError("alerts need exactly one of --alert-url or --alert-sns")
    if not kinds:
        raise click.UsageError(
            "name what to alert on: --alert-on, --alert-late, --alert-running or --alert-limited"
        )
    target = (
        {"type": "http", "url": options["alert_url"]}
        if options["alert_url"]
        else {"type": "sns", "topic_arn": options["alert_sns"]}
    )
    alerts: dict[str, Any] = {"target": target, **dict.fromkeys(options["alert_on"], True)}
    if options["alert_late"] is not None:
        alerts["late_seconds"] = options["alert_late"]
    if options["alert_running"] is not None:
        alerts["running_seconds"] = options["alert_running"]
    if options["alert_limited"] is not None:
        alerts["limited_seconds"] = options["alert_limited"]
    return alerts


@jobs.command("list")
@click.option("--status", type=choice(JobStatus))
@click.option("--name", help="Only the job of this exact name.")
@click.option("--name-prefix", help="Only jobs whose name starts with this.")
@click.option("--tag", metavar="KEY=VALUE", help="Only jobs carrying this tag.")
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True)
@click.option("--cursor", help="Continue from a previous page.")
@click.option("--all", "everything", is_flag=True, help="Follow every page.")
@api_command
def jobs_list(
    ctx: Context,
    status: str | None,
    name: str | None,
    name_prefix: str | None,
    tag: str | None,
    limit: int,
    cursor: str | None,
    everything: bool,
) -> None:
    """Your jobs, newest first."""
    items, next_cursor = collect(
        lambda c: ctx.client.list_jobs(
            limit=limit, cursor=c or cursor, status=status, name=name, name_prefix=name_prefix, tag=tag
        ),
        everything,
    )
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


BATCH = 100


def _create_from_file(ctx: Context, lines: Any, idempotency_key: str | None) -> None:
    """One request per 100 lines (POST /v1/jobs/batch); each job answered on its own. With a key,
    batch ``n`` is sent as ``<key>-<n>``: running the same file again answers as the first time."""
    bodies: list[tuple[int, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            bodies.append((number, json.loads(line)))
        except ValueError as error:
            raise click.UsageError(f"line {number} is not JSON: {error}") from error
    if not bodies:
        raise click.UsageError("the file holds no jobs")
    answers: list[dict[str, Any]] = []
    for start in range(0, len(bodies), BATCH):
        chunk = bodies[start : start + BATCH]
        key = f"{idempotency_key}-{start // BATCH}" if idempotency_key else None
        result = ctx.client.create_jobs([body for _number, body in chunk], key)
        for item in result["items"]:
            answers.append({"line": chunk[item["index"]][0], **item})
    failed = [answer for answer in answers if answer["status"] != 201]
    if ctx.as_json:
        emit_json(answers)
    else:
        rows = [
            [
                answer["line"],
                answer["status"],
                answer["job"]["job_id"] if answer.get("job") else "-",
                f"{answer['error']['field']}: {answer['error']['reason']}" if answer.get("error") else "",
            ]
            for answer in answers
        ]
        click.echo(table(rows, ["line", "status", "job id", "error"]))
        click.echo(f"{len(answers) - len(failed)} created, {len(failed)} refused")
    if failed:
        sys.exit(EXIT_REFUSED)  # some were refused: each line says why


def show_job(ctx: Context, job: dict[str, Any]) -> None:
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
                *(
                    [("jitter", f"each run up to {job['jitter_seconds']} s after its time")]
                    if job.get("jitter_seconds")
                    else []
                ),
                (
                    "last run",
                    f"{last.get('status')} {last.get('scheduled_for')} lateness {last.get('lateness_ms')} ms"
                    if last
                    else "-",
                ),
                *(_pause_lines(job["pause"]) if job.get("pause") else []),
                *(
                    [("runs left", f"{job['remaining_runs']} of {job['max_runs']}")]
                    if job.get("max_runs") is not None
                    else []
                ),
                *(
                    [("max concurrent", job["max_concurrent"])]
                    if job.get("max_concurrent") is not None
                    else []
                ),
                *([("to be deleted", job["deletes_at"])] if job.get("deletes_at") else []),
                *([("alerts", _alerts_text(job["alerts"]))] if job.get("alerts") else []),
                *([("failed runs to", job["dead_letter"]["queue_url"])] if job.get("dead_letter") else []),
                ("runs", job["run_counts"]),
                ("retry", job["retry"]),
                ("tags", job["tags"]),
                ("created", job["created_at"]),
            ]
        )
    )


def _alerts_text(alerts: dict[str, Any]) -> str:
    kinds = [kind for kind in ("failed", "missed") if alerts.get(kind)]
    if alerts.get("late_seconds") is not None:
        kinds.append(f"late > {alerts['late_seconds']} s")
    if alerts.get("running_seconds") is not None:
        kinds.append(f"running > {alerts['running_seconds']} s")
    if alerts.get("limited_seconds") is not None:
        kinds.append(f"waiting on a limit > {alerts['limited_seconds']} s")
    return f"{', '.join(kinds)} -> {target_text(alerts['target'])}"


@jobs.command("get")
@click.argument("job_id")
@api_command
def jobs_get(ctx: Context, job_id: str) -> None:
    """One job: status, schedule, next five fire times, last run."""
    show_job(ctx, ctx.client.get_job(job_id))


def _pause_lines(pause: dict[str, Any]) -> list[tuple[str, Any]]:
    since = f"since {pause['at']} by {pause['by'] or '-'}"
    lines: list[tuple[str, Any]] = [
        ("paused", since + (f" until {pause['until']}" if pause["until"] else ""))
    ]
    if pause.get("note"):
        lines.append(("note", pause["note"]))
    return lines


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
            show_run(ctx, result)
        else:
            show_job(ctx, result)


@jobs.command("pause")
@click.argument("job_id")
@click.option("--note", help="Why: shown with the pause (up to 500 characters).")
@click.option(
    "--until", help='Resume by itself then: "in 2h", or an ISO date-time (naive: the schedule\'s zone).'
)
@api_command
def jobs_pause(ctx: Context, job_id: str, note: str | None, until: str | None) -> None:
    """Stop firing until resumed, or until --until; a paused job paused again gets the new note."""
    body: dict[str, Any] = {}
    if note is not None:
        body["note"] = note
    if until is not None:
        body["until"] = parse_when(until)
    show_job(ctx, ctx.client.job_action(job_id, "pause", body or None))


_job_action("resume", "Fire again; the misfire policy decides about what was missed.")
_job_action("run", "Run once, now (also while paused).")
_job_action("cancel", "Cancel: no further runs; the history is kept.")
