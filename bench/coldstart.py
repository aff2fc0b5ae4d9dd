"""Cold start: how long each Lambda handler module takes to import, as deployed, next to boto3.

As deployed means what a cold Lambda does with the assets ``punctual/cdk/assets.py`` builds: a fresh
interpreter of the runtime's Python (3.13), isolated (``-I -S``), with nothing on its path but the
staged code, the layer's packages and the runtime's SDK (here their *twin*: the same pins built for
this machine, ``punctual/cdk/assets.py``), importing from the shipped bytecode, which it cannot rewrite
(read-only ``/var/task``). Each import runs in a new process, repeated and interleaved with the
others, and the median is reported next to ``import boto3`` in the same setting (the target: each
handler imports in at most 1.5x the time of ``import boto3``).

For comparison, ``no_bytecode``: the same without the shipped pycs, which is what a cold start did
before the assets carried them. And ``python -X importtime`` of each handler after boto3, summed by
top-level package: what a handler adds to boto3.

    python -m bench.coldstart [--repeat 15]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import log, machine, write_json
from punctual.cdk.assets import LAMBDA_PYTHON_VERSION, build_twin, runtime_python, stage_code
from punctual_functions.core.settings import Settings

MODULES = (
    "boto3",
    "punctual_functions.api.handler",
    "punctual_functions.dispatcher.handler",
    "punctual_functions.worker.handler",
)
# What a cold api pays, on top of its import, for its first request with a body (a create): pydantic
# and the request models load then, and the body is checked (no AWS call). Not a target: the
# target is about the import; measured so the price the import no longer pays is seen where it went.
FIRST_BODY = "punctual_functions.api.handler + first body"
CREATE_BODY = {
    "schedule": {"cron": "0 13 * * 1-5", "timezone": "Europe/Berlin"},
    "target": {"type": "http", "url": "https://example.com/hook"},
}
STATEMENTS = {module: f"import {module}" for module in MODULES} | {
    FIRST_BODY: "import punctual_functions.api.handler as api; "
    f"api.app.match('POST', '/v1/jobs')[0].body.model_class().model_validate({CREATE_BODY!r})"
}
MEASURED = (*MODULES, FIRST_BODY)
PROBE = (
    "import sys; sys.path[:0] = {paths!r}; import time; t = time.perf_counter(); {statement}; "
    "print(time.perf_counter() - t)"
)
TARGET_RATIO = 1.5


def _env() -> dict[str, str]:
    """What a deployed function's environment has that an import reads: its settings and region."""
    return {
        **Settings(queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/work").to_env(),
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_SERVICE_NAME": "punctual",
        "PATH": os.environ.get("PATH", ""),
    }


def _import_once(python: str, paths: list[str], module: str) -> float:
    """Seconds the import took inside a fresh, isolated interpreter."""
    result = subprocess.run(
        [python, "-I", "-S", "-B", "-c", PROBE.format(paths=paths, statement=STATEMENTS[module])],
        capture_output=True,
        text=True,
        env=_env(),
        check=True,
    )
    return float(result.stdout.strip())


def _without_bytecode(source: Path, destination: Path) -> Path:
    shutil.copytree(source, destination, ignore=shutil.ignore_patterns("__pycache__"))
    return destination


def _importtime(python: str, paths: list[str], module: str) -> dict[str, Any]:
    """``-X importtime`` of ``module`` imported after boto3: what it adds, by top-level package."""
    code = f"import sys; sys.path[:0] = {paths!r}; import boto3; import {module}"
    result = subprocess.run(
        [python, "-I", "-S", "-B", "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        env=_env(),
        check=True,
    )
    rows: list[tuple[int, str]] = []
    after_boto3 = module == "boto3"
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, name = (part.strip() for part in line[len("import time:") :].split("|"))
        if after_boto3:
            rows.append((int(self_us), name))
        elif name == "boto3":
            after_boto3 = True
    by_package: dict[str, int] = {}
    for micros, module_name in rows:
        top = module_name.split(".")[0]
        by_package[top] = by_package.get(top, 0) + micros
    packages = sorted(by_package.items(), key=lambda kv: -kv[1])
    slowest = sorted(rows, key=lambda r: -r[0])[:15]
    return {
        "module": module,
        "total_self_ms": round(sum(r[0] for r in rows) / 1000, 1),
        "modules_imported": len(rows),
        "by_top_level_package_ms": [
            {"package": p, "self_ms": round(us / 1000, 1)} for p, us in packages[:15]
        ],
        "slowest_modules_self_ms": [{"module": n, "self_ms": round(us / 1000, 1)} for us, n in slowest],
    }


def run(repeat: int = 15) -> dict[str, Any]:
    began = time.monotonic()
    python = runtime_python()
    twin = build_twin()
    work = Path(tempfile.mkdtemp(prefix="punctual-coldstart-"))
    try:
        code = stage_code(work / "code")
        deployed = [str(code), *map(str, twin)]
        bare = [str(_without_bytecode(code, work / "code-bare"))]
        bare += [str(_without_bytecode(path, work / f"bare-{n}")) for n, path in enumerate(twin)]
        samples: dict[str, dict[str, list[float]]] = {
            m: {"as_deployed": [], "no_bytecode": []} for m in MEASURED
        }
        for round_ in range(repeat):
            log(f"coldstart: round {round_ + 1} of {repeat}")
            for module in MEASURED:  # interleaved, so a busy moment hits every module alike
                samples[module]["as_deployed"].append(_import_once(python, deployed, module))
                samples[module]["no_bytecode"].append(_import_once(python, bare, module))
        results: dict[str, Any] = {
            module: {
                "as_deployed_import_ms": _stats_ms(figures["as_deployed"]),
                "no_bytecode_import_ms": _stats_ms(figures["no_bytecode"]),
            }
            for module, figures in samples.items()
        }
        base = results["boto3"]["as_deployed_import_ms"]["median"]
        base_bare = results["boto3"]["no_bytecode_import_ms"]["median"]
        for module in MEASURED[1:]:
            figures = results[module]
            figures["ratio_to_boto3_as_deployed"] = round(
                figures["as_deployed_import_ms"]["median"] / base, 2
            )
            figures["ratio_to_boto3_no_bytecode"] = round(
                figures["no_bytecode_import_ms"]["median"] / base_bare, 2
            )
            if module in MODULES:  # the target is the handlers' import
                figures["meets_target"] = figures["ratio_to_boto3_as_deployed"] <= TARGET_RATIO
        slowest = max(MODULES[1:], key=lambda m: results[m]["as_deployed_import_ms"]["median"])
        profiles = {module: _importtime(python, deployed, module) for module in MODULES[1:]}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "name": "coldstart",
        "what": "median import time of each handler module as deployed (runtime's Python, shipped bytecode, "
        "isolated), next to `import boto3`",
        "python": LAMBDA_PYTHON_VERSION,
        "repeat": repeat,
        "target_ratio": TARGET_RATIO,
        "modules": results,
        "slowest_handler": slowest,
        "importtime_after_boto3": profiles,
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
        f"== coldstart (import in a fresh Python {result['python']}, median of {result['repeat']}, ms) ==",
        f"{'module':<32} {'as deployed':>12} {'ratio':>6} {'no bytecode':>12} {'ratio':>6}",
    ]
    for module, figures in result["modules"].items():
        lines.append(
            f"{module:<32} {figures['as_deployed_import_ms']['median']:12.1f}"
            f" {figures.get('ratio_to_boto3_as_deployed', 1.0):6.2f}"
            f" {figures['no_bytecode_import_ms']['median']:12.1f}"
            f" {figures.get('ratio_to_boto3_no_bytecode', 1.0):6.2f}"
        )
    for module, profile in result["importtime_after_boto3"].items():
        top = ", ".join(f"{r['package']} {r['self_ms']:g}" for r in profile["by_top_level_package_ms"][:8])
        lines.append(f"-X importtime {module} after boto3: {profile['modules_imported']} modules; ms: {top}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.repeat)
    write_json("coldstart", result)
    from bench import plots

    plots.write("coldstart", result)
    print(json.dumps(result, indent=2) if args.json else report(result))


if __name__ == "__main__":
    main()
