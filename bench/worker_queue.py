"""What the worker costs the queue: re-deliveries of a batch with mixed durations, and heartbeats.

Two measurements (docs/benchmarks.md, "Worker and queue"):

- **Re-deliveries.** One-off jobs due at the same second, half calling a webhook that answers at
  once and half one that answers after ``slow_seconds``, so that every batch of ten mixes both. The
  real worker handler runs each batch as Lambda's event source mapping would: pollers receive with
  the queue's deployed visibility timeout, invoke the handler, and delete the batch's successes only
  when it returns. Every receive of a message after its first is a re-delivery; the figure is per
  1,000 runs, with the worker's SQS calls per run.
- **Heartbeats.** The worker's real ``Heartbeat`` run in simulated time for attempts of 5 s to 840 s:
  how many renewals (each a conditional write and an SQS call) an attempt makes, and how long a dead
  worker's attempt waits before another takes it over (the lease at its age).

    python -m bench.worker_queue                      # both, 3 runs of the re-delivery scenario
    python -m bench.worker_queue --runs 1 --jobs 200  # quicker
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import boto3

from bench.common import log, machine, spread, write_json
from punctual.local.emulator import EmulatorThread
from punctual.local.env import LOCAL_CREDENTIALS
from punctual.local.gateway import LambdaContext
from punctual.local.provision import provision
from punctual.local.roles import _to_event
from punctual.testing.receiver import Receiver
from punctual_functions.core import aws
from punctual_functions.core.factories import build_queue, build_store, build_target_executor
from punctual_functions.core.model import iso
from punctual_functions.core.resources import WORKER_TIMEOUT_SECONDS, deployed_visibility_seconds
from punctual_functions.core.settings import Settings

DEPLOYED_VISIBILITY_SECONDS = deployed_visibility_seconds(0)  # no batching window, the default
BATCH_SIZE = 10
POLLERS = 10  # concurrent batches, as the event source mapping scales out


def _responder(slow_seconds: float) -> Any:
    def answer(path: str, _n: int) -> tuple[int, bytes]:
        if path.startswith("/slow"):
            time.sleep(slow_seconds)
        return 200, b"{}"

    return answer


def _executor(settings: Settings) -> Any:
    """The worker's executor as ``punctual_functions.worker.handler.run_executor`` builds it, with its SQS
    calls counted."""
    from punctual_functions.worker import handler as worker
    from punctual_functions.worker.execute import RunExecutor

    queue: Any = build_queue(settings)
    calls: collections.Counter[str] = collections.Counter()
    queue.client.meta.events.register("before-call.sqs.*", lambda model, **_: calls.update([model.name]))
    try:  # the ledger the handler wraps its queue in (absent before the re-delivery fix)
        from punctual_functions.worker.batch import VisibilityLedger

        queue = VisibilityLedger(queue)
    except ImportError:
        pass
    executor = RunExecutor(build_store(settings), queue, build_target_executor(settings), settings)
    worker.run_executor = lambda: executor  # type: ignore[assignment]
    return calls


def _poll(
    settings: Settings,
    queue_arn: str,
    stop: threading.Event,
    receives: collections.Counter[str],
    bodies: dict[str, str],
) -> None:
    """One poller of the event source mapping: receive, invoke, delete the successes afterwards."""
    from punctual_functions.worker import handler as worker

    sqs: Any = boto3.client(  # its own client: the worker's calls are counted on the shared one
        "sqs", region_name=settings.region, endpoint_url=settings.aws_endpoint_url
    )
    while not stop.is_set():
        response = sqs.receive_message(
            QueueUrl=settings.queue_url,
            MaxNumberOfMessages=BATCH_SIZE,
            WaitTimeSeconds=1,
            AttributeNames=["All"],
        )  # no VisibilityTimeout: the queue's own, as Lambda's poller receives
        messages = response.get("Messages") or []
        if not messages:
            continue
        receives.update(m["MessageId"] for m in messages)
        bodies.update((m["MessageId"], m["Body"]) for m in messages)
        event = _to_event(messages, queue_arn, settings.region)
        result = worker.handler(event, cast(Any, LambdaContext(timeout_seconds=WORKER_TIMEOUT_SECONDS)))
        failed = {item["itemIdentifier"] for item in result.get("batchItemFailures", [])}
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            sqs.delete_message_batch(
                QueueUrl=settings.queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)],
            )


def redelivery_run(jobs: int, slow_seconds: float) -> dict[str, Any]:
    """One run of the mixed-duration scenario on a fresh emulator."""
    from punctual_functions.api.requests import CreateJobIn
    from punctual_functions.api.service import JobService
    from punctual_functions.core.dispatching import Dispatcher
    from punctual_functions.core.ssrf_guard import NetworkPolicy

    for key, value in LOCAL_CREDENTIALS.items():
        os.environ.setdefault(key, value)
    emulator = EmulatorThread().start()
    prefix = f"b{uuid.uuid4().hex[:8]}"
    settings = provision(
        Settings(
            aws_endpoint_url=emulator.endpoint,
            table_name=prefix,
            http_allow_loopback=True,
        ),
        prefix=prefix,
    )
    sqs: Any = aws.client("sqs", settings)
    sqs.set_queue_attributes(
        QueueUrl=settings.queue_url, Attributes={"VisibilityTimeout": str(DEPLOYED_VISIBILITY_SECONDS)}
    )
    queue_arn = sqs.get_queue_attributes(QueueUrl=settings.queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    calls = _executor(settings)
    store, queue = build_store(settings), build_queue(settings)
    service = JobService(
        store, Dispatcher(store, queue, settings), settings, NetworkPolicy(allow_loopback=True, allow_list=())
    )
    receives: collections.Counter[str] = collections.Counter()
    bodies: dict[str, str] = {}
    kinds: dict[str, str] = {}
    stop = threading.Event()
    with Receiver(_responder(slow_seconds)) as receiver:
        due = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=max(20, jobs // 15))

        def create(index: int) -> None:
            path = "/slow" if index % 2 else "/fast"
            body = {"schedule": {"at": iso(due)}, "target": {"type": "http", "url": receiver.url + path}}
            job = service.create_job("bench", CreateJobIn.model_validate(body))
            kinds[job["job_id"]] = path.strip("/")

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(create, range(jobs)))
        if datetime.now(UTC) > due - timedelta(seconds=3):
            raise RuntimeError("creating the jobs took longer than their due time allows: fewer --jobs")
        calls.clear()  # the worker's calls from here on
        pollers = [
            threading.Thread(target=_poll, args=(settings, queue_arn, stop, receives, bodies), daemon=True)
            for _ in range(POLLERS)
        ]
        for poller in pollers:
            poller.start()
        deadline = time.monotonic() + 600
        while len(receiver.deliveries) < jobs and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(slow_seconds + 5)  # late re-deliveries of the last batches
        stop.set()
        for poller in pollers:
            poller.join(timeout=10)
        delivered = len(receiver.deliveries)
    emulator.stop()
    redelivered = sum(count - 1 for count in receives.values())
    by_kind: collections.Counter[str] = collections.Counter()
    for message_id, count in receives.items():
        if count > 1:
            by_kind[kinds.get(json.loads(bodies[message_id])["job_id"], "?")] += count - 1
    return {
        "jobs": jobs,
        "delivered": delivered,
        "messages": len(receives),
        "receives": sum(receives.values()),
        "redelivered": redelivered,
        "redelivered_per_1000_runs": round(1000 * redelivered / jobs, 1),
        "redelivered_by_call": dict(by_kind),  # fast: answered at once; slow: after slow_seconds
        "worker_sqs_calls_per_run": {name: round(count / jobs, 3) for name, count in sorted(calls.items())},
    }


class _SimulatedAttempt:
    """The store, the queue and the clock of one attempt of ``seconds``, in simulated time."""

    def __init__(self, seconds: float, start: datetime) -> None:
        self.now = 0.0
        self.end = seconds
        self.start = start
        self.renewals = 0
        self.visibility_calls = 0

    def __call__(self) -> datetime:
        return self.start + timedelta(seconds=self.now)

    def wait(self, _event: object, wanted: float) -> bool:
        if self.now + wanted >= self.end:
            self.now = self.end
            return True
        self.now += wanted
        return False

    def monotonic(self) -> float:
        return self.now

    def renew_lease(self, run: Any, lease_until: datetime) -> bool:
        self.renewals += 1
        return True

    def change_visibility(self, receipt_handle: str, seconds: int) -> None:
        self.visibility_calls += 1


def heartbeats() -> dict[str, Any]:
    """The real ``Heartbeat`` in simulated time: renewals per attempt and the take-over bound."""
    from punctual_functions.core.model import Run, RunStatus
    from punctual_functions.worker.heartbeat import Heartbeat, lease_for

    base = Settings().lease_seconds
    start = datetime(2026, 11, 22, tzinfo=UTC)
    run = Run(job_id="j", run_id="r", owner="o", scheduled_for=start, status=RunStatus.RUNNING)
    rows = []
    for seconds in (5, 30, 60, 300, 840):
        attempt = _SimulatedAttempt(seconds, start)
        Heartbeat(
            cast(Any, attempt),
            cast(Any, attempt),
            run,
            "receipt",
            base_lease=base,
            clock=cast(Any, attempt),
        )._run()
        rows.append(
            {
                "attempt_seconds": seconds,
                "renewals": attempt.renewals,
                "visibility_calls": attempt.visibility_calls,
                # before: a 4 s lease renewed every third of it, whatever the attempt's age
                "renewals_fixed_lease": int(seconds // max(1.0, base / 3)),
                "takeover_after_death_seconds": lease_for(seconds, base),
            }
        )
    return {"base_lease_seconds": base, "attempts": rows}


def run(runs: int = 3, jobs: int = 1000, slow_seconds: float = 6.0) -> dict[str, Any]:
    results = []
    for index in range(runs):
        log(f"worker_queue: re-delivery run {index + 1}/{runs} ({jobs} jobs, slow {slow_seconds} s)")
        results.append(redelivery_run(jobs, slow_seconds))
        log(f"  {json.dumps(results[-1])}")
    return {
        "machine": machine(),
        "repetitions": runs,
        "redelivery": {
            "runs": results,
            "redelivered_per_1000_runs": spread(r["redelivered_per_1000_runs"] for r in results),
            "slow_seconds": slow_seconds,
            "batch_size": BATCH_SIZE,
            "visibility_timeout_seconds": DEPLOYED_VISIBILITY_SECONDS,
        },
        "heartbeat": heartbeats(),
    }


def report(result: dict[str, Any]) -> str:
    redelivery = result["redelivery"]
    figure = redelivery["redelivered_per_1000_runs"]
    lines = [
        f"Re-deliveries per 1,000 runs, batches of {redelivery['batch_size']} mixing instant and"
        f" {redelivery['slow_seconds']:g} s calls: median {figure.get('median')}"
        f" ({figure.get('min')}-{figure.get('max')})",
    ]
    for one in redelivery["runs"]:
        calls = one["worker_sqs_calls_per_run"]
        lines.append(f"  run: {one['redelivered']} of {one['jobs']}; worker SQS calls/run {calls}")
    lines.append(f"Heartbeat (base lease {result['heartbeat']['base_lease_seconds']} s):")
    for row in result["heartbeat"]["attempts"]:
        lines.append(
            f"  {row['attempt_seconds']:>4} s attempt: {row['renewals']} renewals (fixed lease:"
            f" {row['renewals_fixed_lease']}), taken over {row['takeover_after_death_seconds']} s after its"
            " worker dies"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--slow", type=float, default=6.0)
    parser.add_argument("--redelivery-only", action="store_true", help="(for a commit without the heartbeat)")
    args = parser.parse_args()
    if args.redelivery_only:
        print(json.dumps(redelivery_run(args.jobs, args.slow)))
        return
    result = run(args.runs, args.jobs, args.slow)
    write_json("worker_queue", result)
    print(report(result))


if __name__ == "__main__":
    main()
