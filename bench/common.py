"""What the benchmarks share: the machine, percentiles, the local stack, the API and the results."""

from __future__ import annotations

import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from punctual.local.env import LOCAL_CREDENTIALS
from punctual.local.supervisor import free_port, wait_for_port
from punctual.testing.stack import StackProcess
from punctual.testing.stack import local_stack as start_local_stack

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
TOKEN = "local-dev-token"


def log(message: str) -> None:
    """Progress goes to stderr, so stdout keeps only the figures."""
    print(f"[{datetime.now(UTC):%H:%M:%S}] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------ machine


def machine() -> dict[str, Any]:
    """What the figures were measured on: they mean little without it."""
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor()
    versions: dict[str, str | None] = {}
    for package in ("boto3", "botocore", "moto", "aws-lambda-powertools", "pydantic", "croniter"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT, check=False
    ).stdout.strip()
    # Uncommitted changes to the engine mean the figures are not those of the commit alone.
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "punctual_functions", "punctual"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    ).stdout.split()
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
        "commit": commit,
        "engine_uncommitted_changes": dirty[1::2],
    }


# --------------------------------------------------------------------------------------- statistics


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank quantile: the smallest value with at least ``q`` of the values at or below it."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def summary(values: Iterable[float], digits: int = 1) -> dict[str, Any]:
    """count, min, p50, p90, p95, p99, max and mean (nearest-rank), rounded."""
    ordered = sorted(values)
    if not ordered:
        return {"count": 0}

    def r(x: float) -> float:
        return round(x, digits)

    return {
        "count": len(ordered),
        "min": r(ordered[0]),
        "p50": r(quantile(ordered, 0.50)),
        "p90": r(quantile(ordered, 0.90)),
        "p95": r(quantile(ordered, 0.95)),
        "p99": r(quantile(ordered, 0.99)),
        "max": r(ordered[-1]),
        "mean": r(sum(ordered) / len(ordered)),
    }


def spread(values: Iterable[float | None], digits: int = 1) -> dict[str, Any]:
    """One figure over repeated runs: the median (the headline), the lowest and highest, how many."""
    present = sorted(v for v in values if v is not None and not math.isnan(v))
    if not present:
        return {"runs": 0}
    return {
        "median": round(statistics.median(present), digits),
        "min": round(present[0], digits),
        "max": round(present[-1], digits),
        "runs": len(present),
    }


def spread_of_summaries(summaries: Sequence[dict[str, Any]], digits: int = 1) -> dict[str, Any]:
    """Each statistic of per-run ``summary()`` dicts (count, p50, ..., max) as a ``spread()``."""
    keys = ("count", "p50", "p90", "p95", "p99", "max", "mean")
    return {key: spread((s.get(key) for s in summaries), digits) for key in keys}


def median_tree(runs: Sequence[Any], digits: int = 3) -> Any:
    """The median of every number in a list of same-shaped results, in the same shape.

    Dicts are merged by key (a key some runs lack counts as 0 there: an operation a run never
    made), lists and strings are taken from the first run."""
    dicts = [run for run in runs if isinstance(run, dict)]
    if dicts:
        keys = list(dict.fromkeys(k for run in dicts for k in run))
        return {
            key: median_tree([run.get(key, 0) if isinstance(run, dict) else 0 for run in runs], digits)
            for key in keys
        }
    numbers = [float(run) for run in runs if isinstance(run, int | float) and not isinstance(run, bool)]
    if len(numbers) < len(runs):
        return runs[0]
    return round(statistics.median(numbers), digits)


def histogram(values: Iterable[float], edges: Sequence[float]) -> list[dict[str, Any]]:
    """Counts per bin ``[edges[i], edges[i+1])``; the last bin is open-ended."""
    counts = [0] * len(edges)
    for value in values:
        index = 0
        for i, edge in enumerate(edges):
            if value >= edge:
                index = i
        counts[index] += 1
    out = []
    for i, edge in enumerate(edges):
        upper = edges[i + 1] if i + 1 < len(edges) else None
        out.append({"from": edge, "to": upper, "count": counts[i]})
    return out


def histogram_text(bins: list[dict[str, Any]], unit: str = "ms", width: int = 40) -> str:
    """A histogram as fixed-width text, for the terminal and the markdown summary."""
    peak = max((b["count"] for b in bins), default=0) or 1
    lines = []
    for b in bins:
        label = f"{b['from']:g}-{b['to']:g} {unit}" if b["to"] is not None else f">= {b['from']:g} {unit}"
        bar = "#" * round(width * b["count"] / peak)
        lines.append(f"{label:>16} | {b['count']:5d} {bar}")
    return "\n".join(lines)


# -------------------------------------------------------------------------------------------- API


@dataclass
class Api:
    base_url: str
    token: str = TOKEN

    def call(self, method: str, path: str, body: Any = None, timeout: float = 30) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        status, job = self.call("POST", "/v1/jobs", body)
        if status != 201:
            raise RuntimeError(f"create answered {status}: {job}")
        return dict(job)

    def runs(self, job_id: str, limit: int = 100) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor = None
        while True:
            query = f"?limit={limit}" + (f"&cursor={urllib.parse.quote(cursor)}" if cursor else "")
            status, page = self.call("GET", f"/v1/jobs/{job_id}/runs{query}")
            if status != 200:
                raise RuntimeError(f"runs of {job_id} answered {status}: {page}")
            items.extend(page["items"])
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    def wait_healthy(self, timeout: float = 60, process: subprocess.Popen[bytes] | None = None) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.base_url + "/v1/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"the process serving {self.base_url} exited with {process.returncode}")
            time.sleep(0.1)
        raise TimeoutError(f"{self.base_url} not healthy after {timeout:.0f}s")


# ------------------------------------------------------------------------------------ local stack


@dataclass
class StackHandle:
    """A running ``punctual local`` (``punctual/testing/stack.py``) and a client for its API."""

    api: Api
    stack: StackProcess

    @property
    def state_dir(self) -> Path:
        return self.stack.state_dir

    def roles(self) -> dict[str, int]:
        return self.stack.roles()

    def log_text(self) -> str:
        return self.stack.log_text()


@contextmanager
def local_stack(
    workers: int | None = 3,
    tick_seconds: float | None = 10,
    lookahead_seconds: int | None = 60,
    shards: int = 4,
    log_format: str = "text",
) -> Iterator[StackHandle]:
    """``punctual local`` as a subprocess on free ports, in a temporary directory; stopped with SIGINT.
    ``None`` for the workers, the tick or the look-ahead leaves the stack's default.
    ``log_format="json"``: the roles log JSON lines, as on AWS (for reading their fields back)."""
    workdir = Path(tempfile.mkdtemp(prefix="punctual-bench-"))
    with start_local_stack(
        workdir,
        workers=workers,
        tick_seconds=tick_seconds,
        lookahead_seconds=lookahead_seconds,
        shards=shards,
        env={"PUNCTUAL_LOG_FORMAT": log_format},
    ) as stack:
        yield StackHandle(Api(stack.base_url), stack)


@contextmanager
def emulator(workdir: Path) -> Iterator[str]:
    """The embedded AWS emulator (``punctual.local.emulator``) alone, as a subprocess: its endpoint."""
    for key, value in LOCAL_CREDENTIALS.items():
        os.environ.setdefault(key, value)
    port = free_port()
    log_file = (workdir / "emulator.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "punctual.local.emulator", "--port", str(port)],
        env={**os.environ, **LOCAL_CREDENTIALS},
        stdout=log_file,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for_port(port)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log_file.close()


# ---------------------------------------------------------------------------------------- results


def write_json(name: str, data: Any) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    return path


def write_text(name: str, text: str) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / name
    path.write_text(text)
    return path


def utc_ms(moment: datetime) -> float:
    """Epoch seconds of a moment, at millisecond precision."""
    return round(moment.timestamp() * 1000) / 1000


_TEXT_OUTCOME = re.compile(
    r"\b(?:run succeeded|run failed|retry scheduled)\b.*?\bjob_id=(\S+).*?\bhold_ms=(-?\d+)"
)


def worker_holds(log_text: str) -> dict[str, float]:
    """``hold_ms`` by job id (its last outcome line), from the worker's outcome lines, JSON (as on
    AWS) or the local stack's readable ``key=value`` lines."""
    holds: dict[str, float] = {}
    for raw in log_text.splitlines():
        if raw.startswith("{"):
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if (
                line.get("message") in ("run succeeded", "run failed", "retry scheduled")
                and isinstance(line.get("job_id"), str)
                and isinstance(line.get("hold_ms"), int | float)
            ):
                holds[line["job_id"]] = float(line["hold_ms"])
        elif match := _TEXT_OUTCOME.search(raw):
            holds[match.group(1)] = float(match.group(2))
    return holds
