"""Groups shown, not assumed: the same scenario simulated whole (``Scenario.unsplit``: every group of
shards, its sweep fanned out, in one world) and as one group standing for the others, and whether
the two agree within ``GROUP_TOLERANCE``. The large scenarios simulate one group and extrapolate its
counts; this is the check that doing so changes nothing that matters (docs/scale.md, "One group of
shards stands for all")."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from punctual.sim.report import Report
from punctual.sim.scenarios import Scenario, run


@dataclass(frozen=True)
class Tolerance:
    """How far the one group's figures may be from the whole deployment's."""

    # Lateness quantiles: within this many milliseconds, or this share of the whole's, whichever is
    # more (a p99 of 3 ms against 5 ms is agreement; of 300 against 500 is not).
    lateness_ms: float = 25.0
    lateness_share: float = 0.25
    # Requests a job (each operation's) and dollars a million jobs: within this share.
    per_job_share: float = 0.10


GROUP_TOLERANCE = Tolerance()


@dataclass(frozen=True)
class Agreement:
    whole: dict[str, float]
    group: dict[str, float]
    disagreements: list[str] = field(default_factory=list)

    @property
    def agrees(self) -> bool:
        return not self.disagreements

    def as_dict(self) -> dict[str, Any]:
        return {"agrees": self.agrees, **dataclasses.asdict(self)}


def _figures(report: Report) -> dict[str, float]:
    figures = {f"lateness {name} ms": value for name, value in report.lateness_ms.items() if name != "max"}
    figures["requests a job"] = round(sum(report.requests.values()), 3)
    figures["$ a million jobs"] = report.usd_per_million_jobs
    figures["lost, early, twice"] = report.lost + report.early + report.duplicated
    return figures


def group_agreement(whole: Report, group: Report, tolerance: Tolerance = GROUP_TOLERANCE) -> Agreement:
    """Compare the whole deployment's report with one group's: lateness p50 and p99, requests a job,
    dollars a million jobs, and nothing lost, early or twice in either (the maximum is one
    occurrence's: it is reported, not compared)."""
    a, b = _figures(whole), _figures(group)
    wrong: list[str] = []
    for name in a:
        if name.startswith("lateness"):
            allowed = max(tolerance.lateness_ms, tolerance.lateness_share * a[name])
        elif name.startswith("lost"):
            allowed = 0.0
        else:
            allowed = tolerance.per_job_share * a[name]
        if abs(a[name] - b[name]) > allowed:
            wrong.append(f"{name}: whole {a[name]:g}, one group {b[name]:g} (allowed ±{allowed:g})")
    a["lateness max ms"], b["lateness max ms"] = whole.lateness_ms["max"], group.lateness_ms["max"]
    return Agreement(whole=a, group=b, disagreements=wrong)


def check(scenario: Scenario) -> Agreement:
    """Run ``scenario`` whole and as one group, and compare them."""
    whole = run(dataclasses.replace(scenario, name=f"{scenario.name} (whole)", unsplit=True))
    group = run(dataclasses.replace(scenario, name=f"{scenario.name} (one group)", unsplit=False))
    return group_agreement(whole, group)
