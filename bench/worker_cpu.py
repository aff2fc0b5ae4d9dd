"""The worker's CPU per run on the real path: the handler, as Lambda invokes it, against the emulator.

Jobs are created through the api's own service (in this process), due a few seconds ahead with a
webhook target (a receiver in a process of its own); their messages are received here, outside the
measurement, as Lambda's event source mapping would, and handed to the worker's ``handler`` in
batches of ten once due. Timed: the handler's invocations only, by the process's CPU clock (every
thread of theirs: the records, the target calls, the heartbeats). What the handler does is all
there: the batch's reads, the start and outcome writes, the target's call, the messages' visibility,
the log lines.

Repeated (``--repetitions``, each on a fresh emulator): the figure is the median over the runs, with
the lowest and highest. The cost benchmark's figure (``cost.json``) is the same CPU in the local
stack's worker processes, whose batches are smaller (runs that arrive apart) and whose process also
polls SQS for them; this one isolates the handler.

    python -m bench.worker_cpu [--runs 100] [--repetitions 3]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from bench.common import emulator, log, machine, spread, write_json
from punctual.local.env import local_settings
from punctual.local.provision import provision
from punctual.local.supervisor import free_port, wait_for_port

BATCH = 10
# A receiver that answers every POST at once: its CPU is its own process's.
_RECEIVER = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *args):
        pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Receiver).serve_forever()
"""


def _measure(endpoint: str, receiver: int, runs: int, repetition: int) -> dict[str, Any]:
    settings = provision(local_settings(endpoint, prefix=f"workercpu{repetition}"))
    os.environ.update(settings.to_env())  # the worker's handler builds its adapters from these
    from punctual.local.gateway import LambdaContext
    from punctual.local.roles import _to_event
    from punctual_functions.api.requests import CreateJobIn
    from punctual_functions.core import aws
    from punctual_functions.core.factories import build_dispatcher, build_job_service, build_store
    from punctual_functions.core.model import iso
    from punctual_functions.core.settings import get_settings
    from punctual_functions.worker import handler as worker

    get_settings.cache_clear()  # this repetition's table and queues
    worker.run_executor.cache_clear()
    # This repetition's table and queue (the process's default dispatcher is cached for the first).
    service = build_job_service(settings, store=build_store(settings), dispatcher=build_dispatcher(settings))
    due = datetime.now(UTC) + timedelta(seconds=5)
    for _ in range(runs):
        service.create_job(
            "bench",
            CreateJobIn.model_validate(
                {
                    "schedule": {"at": iso(due)},
                    "target": {"type": "http", "url": f"http://127.0.0.1:{receiver}/hook"},
                }
            ),
        )
    sqs: Any = aws.client("sqs", settings)
    arn = sqs.get_queue_attributes(QueueUrl=settings.queue_url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    messages: list[dict[str, Any]] = []
    deadline = time.monotonic() + 60
    while len(messages) < runs and time.monotonic() < deadline:
        answer = sqs.receive_message(
            QueueUrl=settings.queue_url,
            MaxNumberOfMessages=BATCH,
            WaitTimeSeconds=5,
            VisibilityTimeout=300,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages += answer.get("Messages") or []
    time.sleep(max(0.0, (due - datetime.now(UTC)).total_seconds() + 0.3))  # due: no wait in the handler
    failures = 0
    cpu = time.process_time()
    began = time.perf_counter()
    for start in range(0, len(messages), BATCH):
        context = LambdaContext(function_name="punctual-worker-bench", aws_request_id=uuid.uuid4().hex)
        result = worker.handler(
            _to_event(messages[start : start + BATCH], arn, settings.region), cast(Any, context)
        )
        failures += len(result.get("batchItemFailures", []))
    cpu_seconds, seconds = time.process_time() - cpu, time.perf_counter() - began
    done = len(messages) - failures
    return {
        "repetition": repetition,
        "runs": len(messages),
        "failed": failures,
        "worker_cpu_ms_per_run": round(cpu_seconds * 1000 / max(1, done), 2),
        "seconds": round(seconds, 2),
    }


def run(runs: int = 100, repetitions: int = 3) -> dict[str, Any]:
    began = time.monotonic()
    logging.getLogger("punctual").setLevel(logging.WARNING)  # a line a run: noise on the terminal
    measured = []
    receiver = free_port()
    process = subprocess.Popen([sys.executable, "-c", _RECEIVER, str(receiver)])
    try:
        wait_for_port(receiver)
        for k in range(repetitions):
            log(f"worker_cpu: run {k + 1} of {repetitions}, {runs} runs in batches of {BATCH}")
            with emulator(Path(tempfile.mkdtemp(prefix="punctual-bench-worker-cpu-"))) as endpoint:
                measured.append(_measure(endpoint, receiver, runs, k))
    finally:
        process.terminate()
        process.wait(timeout=10)
    return {
        "name": "worker_cpu",
        "what": "the worker handler's CPU per run (batches of ten due at once, webhook target) against"
        " the local emulator; the median over the runs, with the lowest and highest",
        "batch": BATCH,
        "runs_per_repetition": runs,
        "repetitions": repetitions,
        "worker_cpu_ms_per_run": spread((m["worker_cpu_ms_per_run"] for m in measured), 2),
        "failed": sum(m["failed"] for m in measured),
        "per_run": measured,
        "machine": machine(),
        "elapsed_seconds": round(time.monotonic() - began, 1),
    }


def report(result: dict[str, Any]) -> str:
    figure = result["worker_cpu_ms_per_run"]
    return (
        f"== worker CPU per run, handler against the emulator; median of {result['repetitions']} runs"
        f" (lowest-highest) ==\n{result['runs_per_repetition']} runs in batches of {result['batch']}:"
        f" {figure.get('median')} ({figure.get('min')}-{figure.get('max')}) ms a run;"
        f" {result['failed']} failed"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.runs, args.repetitions)
    write_json("worker_cpu", result)
    print(json.dumps(result, indent=2) if args.json else report(result))


if __name__ == "__main__":
    main()
