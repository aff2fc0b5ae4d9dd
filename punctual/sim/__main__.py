"""``python -m punctual.sim``: run scenarios of the simulator and print what they show (docs/scale.md).

python -m punctual.sim                          # every scenario
python -m punctual.sim --only steady-1k,steady-10k --json /tmp/scale.json
python -m punctual.sim --agreement --only steady-100k   # simulated whole and as one group: agree?
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from punctual.sim.groups import check
from punctual.sim.scenarios import SCENARIOS, run
from punctual_functions.core.observability import logger


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m punctual.sim", description=__doc__)
    parser.add_argument("--only", default=",".join(SCENARIOS), help="comma-separated scenario names")
    parser.add_argument("--json", help="write the reports to this file")
    parser.add_argument(
        "--agreement",
        action="store_true",
        help="run each scenario whole and as one group of shards, and compare (punctual/sim/groups.py)",
    )
    args = parser.parse_args(argv)
    logger.setLevel(logging.ERROR)  # the engine's INFO lines, one a run, are not the report
    reports = []
    for name in args.only.split(","):
        if args.agreement:
            agreement = check(SCENARIOS[name.strip()])
            reports.append({"name": name, "lost": 0, "early": 0, "duplicated": 0, **agreement.as_dict()})
            print(json.dumps(reports[-1], default=str), flush=True)
            if not agreement.agrees:
                return 1
            continue
        result = run(SCENARIOS[name.strip()])
        reports.append({"name": name, **result.as_dict()})
        print(json.dumps(reports[-1], default=str), flush=True)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(reports, out, indent=1, default=str)
    return (
        0 if all(report["lost"] == report["early"] == report["duplicated"] == 0 for report in reports) else 1
    )


if __name__ == "__main__":
    sys.exit(main())
