"""``python -m bench.memory``: the memory benchmark on its own (its result written to memory.json,
its report printed), and the two roles it starts in other processes: ``_stack`` (the local stack)
and ``_worker`` (the instrumented worker)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.memory import __doc__ as DESCRIPTION
from bench.memory.arithmetic import DEFAULT_PERIOD_US, DEFAULT_SIZES, quota_us
from bench.memory.report import report
from bench.memory.runner import run
from bench.memory.stack import DEFAULT_SPACING, serve_stack, worker_role

# ----------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["_worker"]:
        worker_role(args[1], args[2:])
        return
    if args[:1] == ["_stack"]:
        serve_stack(args[1])
        return
    parser = argparse.ArgumentParser(
        prog="python -m bench.memory",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES), help="memory sizes, MB")
    parser.add_argument("--batches", type=int, default=8, help="batches of ten per size")
    parser.add_argument("--head-start-ms", type=int, default=250)
    parser.add_argument(
        "--spacing",
        type=int,
        default=DEFAULT_SPACING,
        help="seconds between batches, and the dispatcher's tick (each tick sends one batch)",
    )
    parser.add_argument("--period-us", type=int, default=DEFAULT_PERIOD_US, help="the CFS period")
    parser.add_argument("--json", action="store_true", help="print the JSON result")
    parser.add_argument(
        "--out", type=Path, default=None, help="where to write memory.json (default bench/results/)"
    )
    options = parser.parse_args(args)
    from bench import common

    if options.out is not None:
        common.RESULTS = options.out
    sizes = [int(s) for s in options.sizes.split(",") if s.strip()]
    try:
        for size in sizes:
            quota_us(size, options.period_us)
    except ValueError as error:
        parser.error(str(error))
    result = run(
        sizes=sizes,
        batches=options.batches,
        head_start_ms=options.head_start_ms,
        period_us=options.period_us,
        spacing=options.spacing,
    )
    common.write_json("memory", result)
    print(json.dumps(result, indent=2) if options.json else report(result))


if __name__ == "__main__":
    main()
