"""What the audit trail costs a change: the requests each change makes and the write units of the
change's record, measured on the local emulator through the API's own service (docs/benchmarks.md,
"The audit trail").

Jobs are created, then each is changed as users change jobs: a PATCH of its payload with a note, a
pause with a note, a resume, a run now, a cancel. Every DynamoDB request of each change is counted
(by operation, in this process), and the records the trail kept are read back from the table: their
item sizes give their write units by DynamoDB's rules (1 KB a unit; twice that inside a transaction,
where a change that writes its job puts its record). The target: one write a change, that is one
request item more per change and no request more (a record joins its job's transaction; a create's
and a run now's is one PutItem of their own).

    python -m bench.trail [--jobs 50]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import emulator, log, machine, write_json
from punctual.local.env import local_settings
from punctual.local.provision import provision
from punctual.scale.sizes import item_size
from punctual_functions.api import cancel, changes, pausing, run_now
from punctual_functions.api.create import create_job
from punctual_functions.api.requests import CreateJobIn, PatchJobIn
from punctual_functions.core import aws
from punctual_functions.core.factories import build_job_service

OWNER = "arn:aws:iam::123456789012:role/bench"
ACTIONS = ("created", "updated", "paused", "resumed", "run_now", "cancelled")
WRITE_UNIT_BYTES = 1024


@contextmanager
def _counting() -> Iterator[list[str]]:
    """Every AWS operation this process calls while the block runs, in order."""
    from botocore.client import BaseClient

    calls: list[str] = []
    client_class: Any = BaseClient
    original = client_class._make_api_call

    def counted(client: Any, operation: str, params: dict[str, Any]) -> Any:
        calls.append(f"{client.meta.service_model.service_name}:{operation}")
        return original(client, operation, params)

    client_class._make_api_call = counted
    try:
        yield calls
    finally:
        client_class._make_api_call = original


def run(jobs: int = 50) -> dict[str, Any]:
    logging.getLogger("punctual").setLevel(logging.WARNING)
    with emulator(Path(tempfile.mkdtemp(prefix="punctual-bench-trail-"))) as endpoint:
        settings = provision(local_settings(endpoint, prefix="trail"))
        os.environ.update(settings.to_env())  # what the service's parts read of their own
        service = build_job_service(settings)
        requests: dict[str, list[list[str]]] = {action: [] for action in ACTIONS}
        ids = []
        for index in range(jobs):
            body = {
                "name": f"trail-{index}",
                "schedule": {"cron": "0 3 * * *", "timezone": "Europe/Berlin"},
                "target": {"type": "http", "url": "https://example.com/hook", "headers": {"X-Team": "data"}},
                "payload": {"report": "daily", "rows": list(range(20))},
                "tags": {"team": "data"},
            }
            with _counting() as calls:
                job = create_job(service, OWNER, CreateJobIn.model_validate(body))
            requests["created"].append(calls)
            ids.append(job["job_id"])
        steps = (
            (
                "updated",
                lambda job_id: changes.patch_job(
                    service,
                    OWNER,
                    job_id,
                    PatchJobIn.model_validate({"payload": {"report": "weekly"}, "note": "weekly"}),
                ),
            ),
            ("paused", lambda job_id: pausing.pause_job(service, OWNER, job_id, "maintenance")),
            ("resumed", lambda job_id: pausing.resume_job(service, OWNER, job_id, "done")),
            ("run_now", lambda job_id: run_now.run_now(service, OWNER, job_id)),
            ("cancelled", lambda job_id: cancel.cancel_job(service, OWNER, job_id, "retired")),
        )
        for action, step in steps:
            for job_id in ids:
                with _counting() as calls:
                    step(job_id)
                requests[action].append(calls)
        records = _records(settings, ids)
    return {
        "name": "trail",
        "what": "the audit trail's cost per change: requests and the record's write units",
        "jobs": jobs,
        "repetitions": 1,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "actions": {action: _summary(requests[action], records.get(action, [])) for action in ACTIONS},
        "machine": machine(),
    }


def _records(settings: Any, ids: list[str]) -> dict[str, list[int]]:
    """The trail's items of these jobs, read back: their sizes by action."""
    client: Any = aws.client("dynamodb", settings)
    sizes: dict[str, list[int]] = {}
    for job_id in ids:
        answer = client.query(
            TableName=settings.table_name,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues={":pk": {"S": f"JOB#{job_id}"}, ":prefix": {"S": "CHANGE#"}},
        )
        for item in answer["Items"]:
            sizes.setdefault(item["action"]["S"], []).append(item_size(item))
    return sizes


def _summary(calls: list[list[str]], sizes: list[int]) -> dict[str, Any]:
    """Per change: DynamoDB requests by operation (median), the record's size and its write units
    (alone, and inside the job's transaction)."""
    operations = sorted({call for each in calls for call in each if call.startswith("dynamodb:")})
    per_change = {op: statistics.median(each.count(op) for each in calls) for op in operations}
    size = statistics.median(sizes) if sizes else 0
    units = -(-int(size) // WRITE_UNIT_BYTES)
    return {
        "changes": len(calls),
        "records": len(sizes),
        "dynamodb_requests": per_change,
        "record_bytes": size,
        "record_write_units": units,
        "record_write_units_in_transaction": 2 * units,
    }


def report(results: dict[str, Any]) -> str:
    lines = [f"audit trail: {results['jobs']} jobs, each created and changed five ways"]
    for action, figures in results["actions"].items():
        requests = ", ".join(
            f"{op.split(':')[1]} {count:g}" for op, count in figures["dynamodb_requests"].items()
        )
        size, units = figures["record_bytes"], figures["record_write_units"]
        lines.append(
            f"  {action}: {figures['records']} records of {figures['changes']} changes, {size:.0f} B"
            f" ({units} write unit, {2 * units} in a transaction); requests a change: {requests}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=50)
    args = parser.parse_args(argv)
    results = run(jobs=args.jobs)
    log(report(results))
    write_json("trail", results)


if __name__ == "__main__":
    main()
