"""A burst under a target limit on the local stack: ``jobs`` one-offs due at one second call one
receiver under ``max_concurrent``, each call taking ``call_seconds``. Measures when the last call
came (after the due second), the most calls at once, how many runs waited and the longest wait, and
the emulator's requests by operation over the burst (what a run under a limit costs).

    python -m bench.limits_burst [--repetitions 3] [--jobs 300]

The ideal is ``jobs * call_seconds / max_concurrent`` (6 s for the defaults): slots never idle. What
separates the local stack from it (docs/benchmarks.md, "Target limits: a burst under a limit"): the
emulator serves one DynamoDB request at a time on the machine's two cores, and a run's first
refusal costs a few of them; a hand-over's wake-up goes through the queue to one of the stack's
pollers.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.common import Api, local_stack, log, machine, spread, write_json
from punctual.testing.receiver import Receiver
from punctual_functions.core.model import iso


class _Gauge:
    """Calls open at once at the receiver, each held ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0

    def respond(self, _path: str, _n: int) -> tuple[int, bytes]:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(self.seconds)
        with self.lock:
            self.now -= 1
        return 200, b'{"ok": true}'


def _emulator(log_text: str) -> str:
    found = re.search(r"emulator:\s+(http://\S+)", log_text)
    if found is None:
        raise RuntimeError("the stack did not say where its emulator is")
    return found.group(1)


def _requests(emulator: str, reset: bool = False) -> dict[str, int]:
    request = urllib.request.Request(emulator + "/_punctual/requests", method="DELETE" if reset else "GET")
    with urllib.request.urlopen(request, timeout=10) as response:
        return {} if reset else dict(json.loads(response.read()))


def burst(api: Api, emulator: str, jobs: int, max_concurrent: int, call_seconds: float) -> dict[str, Any]:
    gauge = _Gauge(call_seconds)
    with Receiver(gauge.respond) as receiver:
        name = f"burst-{time.time_ns()}"
        status, answer = api.call(
            "POST", "/v1/limits", {"name": name, "match": receiver.url, "max_concurrent": max_concurrent}
        )
        if status != 201:
            raise RuntimeError(f"limit not created: {status} {answer}")
        due = (datetime.now(UTC) + timedelta(seconds=20)).replace(microsecond=0)
        created: list[dict[str, Any]] = []
        for start in range(0, jobs, 100):
            batch = [
                {"schedule": {"at": iso(due)}, "target": {"type": "http", "url": f"{receiver.url}/job-{n}"}}
                for n in range(start, min(jobs, start + 100))
            ]
            status, answer = api.call("POST", "/v1/jobs/batch", {"jobs": batch})
            if status != 200:
                raise RuntimeError(f"batch create answered {status}: {answer}")
            created += [item["job"] for item in answer["items"]]
        while time.time() < due.timestamp() - 1:
            time.sleep(0.2)
        _requests(emulator, reset=True)
        deadline = time.time() + 300
        while len(receiver.deliveries) < jobs and time.time() < deadline:
            time.sleep(0.2)
        requests = _requests(emulator)
        times = sorted(d.received_at - due.timestamp() for d in receiver.deliveries)
    waits = []
    for job in created:
        status, runs = api.call("GET", f"/v1/jobs/{job['job_id']}/runs")
        if status == 200 and runs["items"] and runs["items"][0].get("limited_ms") is not None:
            waits.append(runs["items"][0]["limited_ms"] / 1000)
    api.call("DELETE", f"/v1/limits/{name}")
    return {
        "delivered": len(times),
        "early": sum(1 for t in times if t < 0),
        "most_at_once": gauge.most,
        "last_seconds": round(times[-1], 2) if times else None,
        "half_seconds": round(times[len(times) // 2], 2) if times else None,
        "waited": len(waits),
        "longest_wait_seconds": round(max(waits), 2) if waits else None,
        "emulator_requests_per_job": {op: round(count / jobs, 2) for op, count in sorted(requests.items())},
    }


def run(
    repetitions: int = 3, jobs: int = 300, max_concurrent: int = 10, call_seconds: float = 0.2
) -> dict[str, Any]:
    runs = []
    with local_stack() as stack:
        emulator = _emulator(stack.log_text())
        for repetition in range(repetitions):
            log(f"limits burst: repetition {repetition + 1}: {jobs} jobs, max_concurrent {max_concurrent}")
            runs.append(burst(stack.api, emulator, jobs, max_concurrent, call_seconds))
    return {
        "name": "limits_burst",
        "what": f"{jobs} one-offs due at one second, one receiver, max_concurrent {max_concurrent}, "
        f"calls of {call_seconds} s, on the local stack",
        "ideal_seconds": round(jobs * call_seconds / max_concurrent, 2),
        "repetitions": repetitions,
        "last_seconds": spread(r["last_seconds"] for r in runs),
        "half_seconds": spread(r["half_seconds"] for r in runs),
        "longest_wait_seconds": spread(r["longest_wait_seconds"] for r in runs),
        "most_at_once": max(r["most_at_once"] for r in runs),
        "runs": runs,
        "machine": machine(),
    }


def report(result: dict[str, Any]) -> str:
    last = result["last_seconds"]
    return (
        f"limits burst ({result['repetitions']} runs): the last of {result['runs'][0]['delivered']} calls "
        f"{last['median']} s after the due second ({last['min']}-{last['max']}; ideal "
        f"{result['ideal_seconds']} s), most at once {result['most_at_once']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=300)
    args = parser.parse_args()
    result = run(repetitions=args.repetitions, jobs=args.jobs)
    write_json("limits_burst", result)
    print(report(result))


if __name__ == "__main__":
    main()
