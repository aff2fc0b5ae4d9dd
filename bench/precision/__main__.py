"""``python -m bench.precision``: the precision benchmark on its own, with or without faults, its
result written (the JSON and the plots) and its report printed (the options: ``--help``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench import common
from bench.precision import __doc__ as DESCRIPTION
from bench.precision.report import report
from bench.precision.runner import run, save


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.precision",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--faults", action="store_true", help="SIGKILL workers/dispatcher during the window")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=115)
    parser.add_argument("--burst", type=int, default=20)
    parser.add_argument("--window", type=int, default=70)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument(
        "--whole-seconds-span",
        type=int,
        default=60,
        help="consecutive whole seconds with 3 or 4 jobs due at each, away from the burst (0: none;"
        " cut to what the window holds)",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON result")
    parser.add_argument(
        "--out", type=Path, default=None, help="where to write the JSON and plots (default bench/results/)"
    )
    args = parser.parse_args()
    if args.out is not None:
        common.RESULTS = args.out
    result = run(
        repetitions=args.repetitions,
        jobs=args.jobs,
        window=args.window,
        burst=args.burst,
        workers=args.workers,
        faults=args.faults,
        whole_seconds_span=args.whole_seconds_span,
    )
    save(result)
    print(json.dumps(result, indent=2) if args.json else report(result))


if __name__ == "__main__":
    main()
