"""``python -m bench.cost``: the cost benchmark on its own, its result written to cost.json and
its report printed (the options: ``--help``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench import common
from bench.common import write_json
from bench.cost import __doc__ as DESCRIPTION
from bench.cost.report import report
from bench.cost.runner import run


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.cost",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--jobs", type=int, default=60, help="one-off jobs created beyond the look-ahead, per repetition"
    )
    parser.add_argument(
        "--soon", type=int, default=40, help="one-off jobs due within seconds, per repetition"
    )
    parser.add_argument("--crons", type=int, default=20)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--out", type=Path, default=None, help="where to write cost.json (default bench/results/)"
    )
    args = parser.parse_args()
    if args.out is not None:
        common.RESULTS = args.out
    result = run(one_off=args.jobs, soon=args.soon, crons=args.crons, repetitions=args.repetitions)
    write_json("cost", result)
    print(json.dumps(result, indent=2) if args.json else report(result))


if __name__ == "__main__":
    main()
