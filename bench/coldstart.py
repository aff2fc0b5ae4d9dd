"""Cold start: how long each Lambda handler module takes to import in a fresh interpreter.

Each import runs in a new ``python`` process, repeated, and the median is reported next to
``import boto3`` alone (the SPEC: "each handler imports in little more than boto3 itself does").
Two bytecode situations are measured, because they differ a lot:

- ``warm_bytecode``: every module's ``.pyc`` exists (a developer machine after the first run);
- ``as_deployed``: only boto3 and its dependencies have bytecode, our code and the layer's
  packages are compiled from source on import. That is what a cold Lambda does with the assets as
  built today (``infra/assets.py`` ships sources only, with ``--no-compile``, and the deployment
  package is read-only, so nothing is ever cached), while the runtime's own boto3 comes compiled.

Both use a private ``PYTHONPYCACHEPREFIX``, so the repository's ``__pycache__`` (or its absence,
with ``PYTHONDONTWRITEBYTECODE`` set) does not matter. Also ``python -X importtime`` of the slowest
handler (and of the others), summed by top-level package.

    python -m bench.coldstart [--repeat 10]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, log, machine, write_json

MODULES = ("boto3", "functions.api.handler", "functions.dispatcher.handler", "functions.worker.handler")
PROBE = "import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"


def _env(prefix: Path, write: bool) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PUNCTUAL_")}
    env["PYTHONPYCACHEPREFIX"] = str(prefix)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _import_once(module: str, env: dict[str, str]) -> tuple[float, float]:
    """(seconds the import took inside the process, seconds for the whole process)."""
    began = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=True,
    )
    return float(result.stdout.strip()), time.perf_counter() - began


def _importtime(module: str, env: dict[str, str]) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=True,
    )
    by_package: dict[str, int] = {}
    rows: list[tuple[int, int, str]] = []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "self [us]" in line:
            continue
        self_us, cumulative_us, name = (part.strip() for part in line[len("import time:") :].split("|"))
        rows.append((int(self_us), int(cumulative_us), name))
        top = name.strip().split(".")[0]
        by_package[top] = by_package.get(top, 0) + int(self_us)
    total = sum(r[0] for r in rows)
    packages = sorted(by_package.items(), key=lambda kv: -kv[1])
    slowest = sorted(rows, key=lambda r: -r[0])[:15]
    ours = sorted({n.strip() for _, _, n in rows if n.strip().startswith("functions")})
    return {
        "module": module,
        "total_self_ms": round(total / 1000, 1),
        "modules_imported": len(rows),
        "our_modules": ours,
        "by_top_level_package_ms": [
            {"package": p, "self_ms": round(us / 1000, 1)} for p, us in packages[:15]
        ],
        "slowest_modules_self_ms": [
            {"module": n.strip(), "self_ms": round(s / 1000, 1)} for s, _, n in slowest
        ],
    }


def run(repeat: int = 10, repeat_cold: int = 5) -> dict[str, Any]:
    began = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="punctual-coldstart-"))
    try:
        warm, boto_only = work / "warm", work / "boto3-only"
        # Fill the caches: one with everything, one with boto3 and what it imports only.
        for module in MODULES:
            _import_once(module, _env(warm, write=True))
        _import_once("boto3", _env(boto_only, write=True))
        results: dict[str, Any] = {}
        for module in MODULES:
            log(f"coldstart: {module}")
            inside, process = zip(
                *(_import_once(module, _env(warm, write=False)) for _ in range(repeat)), strict=True
            )
            cold_inside = []
            for n in range(repeat_cold):
                fresh = work / f"cold-{module}-{n}"
                shutil.copytree(boto_only, fresh)
                cold_inside.append(_import_once(module, _env(fresh, write=False))[0])
                shutil.rmtree(fresh)
            results[module] = {
                "warm_bytecode_import_ms": _stats_ms(list(inside)),
                "warm_bytecode_process_ms": _stats_ms(list(process)),
                "as_deployed_import_ms": _stats_ms(cold_inside),
            }
        base_warm = results["boto3"]["warm_bytecode_import_ms"]["median"]
        base_cold = results["boto3"]["as_deployed_import_ms"]["median"]
        for module in MODULES[1:]:
            results[module]["ratio_to_boto3_warm"] = round(
                results[module]["warm_bytecode_import_ms"]["median"] / base_warm, 2
            )
            results[module]["ratio_to_boto3_as_deployed"] = round(
                results[module]["as_deployed_import_ms"]["median"] / base_cold, 2
            )
        slowest = max(MODULES[1:], key=lambda m: results[m]["warm_bytecode_import_ms"]["median"])
        profiles = {module: _importtime(module, _env(warm, write=False)) for module in MODULES}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "name": "coldstart",
        "what": "median import time of each handler module in a fresh interpreter, next to `import boto3`",
        "repeat": repeat,
        "repeat_as_deployed": repeat_cold,
        "modules": results,
        "slowest_handler": slowest,
        "importtime": profiles,
        "machine": machine(),
        "elapsed_seconds": round(time.monotonic() - began, 1),
    }


def _stats_ms(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    return {
        "median": round(statistics.median(ms), 1),
        "min": round(ms[0], 1),
        "max": round(ms[-1], 1),
        "runs": len(ms),
    }


def report(result: dict[str, Any]) -> str:
    lines = [
        "== coldstart (import time, median ms) ==",
        f"{'module':<32} {'warm pyc':>9} {'ratio':>6} {'as deployed':>12} {'ratio':>6}",
    ]
    for module, figures in result["modules"].items():
        lines.append(
            f"{module:<32} {figures['warm_bytecode_import_ms']['median']:9.1f}"
            f" {figures.get('ratio_to_boto3_warm', 1.0):6.2f}"
            f" {figures['as_deployed_import_ms']['median']:12.1f}"
            f" {figures.get('ratio_to_boto3_as_deployed', 1.0):6.2f}"
        )
    for module, profile in result["importtime"].items():
        top = ", ".join(f"{r['package']} {r['self_ms']:g}" for r in profile["by_top_level_package_ms"][:8])
        lines.append(f"-X importtime {module}: {profile['modules_imported']} modules; ms by package: {top}")
    slowest = result["importtime"][result["slowest_handler"]]
    lines.append(f"slowest modules of {result['slowest_handler']} (self ms):")
    for row in slowest["slowest_modules_self_ms"][:10]:
        lines.append(f"  {row['module']:<56} {row['self_ms']:6.1f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--repeat-as-deployed", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.repeat, args.repeat_as_deployed)
    write_json("coldstart", result)
    from bench import plots

    plots.write("coldstart", result)
    print(json.dumps(result, indent=2) if args.json else report(result))


if __name__ == "__main__":
    main()
