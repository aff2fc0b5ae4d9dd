"""Cost per job: the AWS requests and DynamoDB capacity units the engine spends on each executed job,
turned into dollars.

The stack runs as separate processes like ``punctual local`` (emulator, api, dispatcher, one worker
with four SQS pollers), but each role is ``bench.timed_role``: the real role plus a record of every
AWS call it makes (inside a handler, or by the event source mapping around it; for DynamoDB with the
capacity the answer reports, every request asking for it) and of each handler invocation's duration.
The emulator's own request counter (``/_punctual/requests``) checks the total.

Four scenarios, each repeated (three times by default) on the same stack:

- ``one_off_ahead``: one-off jobs created more than the look-ahead before their time (the usual
  case: "call this at 13:00:05" made well in advance), so the dispatcher dispatches them;
- ``one_off_soon``: one-off jobs due a few seconds after they are created, dispatched by the
  api at once;
- ``one_off_batch``: the ahead jobs again, created 100 a request through ``POST /v1/jobs/batch``
  (the API call and its invocation shared by the jobs of a request);
- ``recurring``: crons every 10 s in steady state (a dispatch writes the next occurrence);
- ``recurring_controls``: the same crons with issue 14's controls on (overlap ``skip``, ``max_runs``,
  jitter, alerts on failure and lateness, ``on_complete: delete``), none of which fires: what the
  controls cost a job that declares them when nothing goes wrong.

The one-off batches of all repetitions overlap in time (three repetitions one after the other would
take four minutes, most of it waiting for the look-ahead), but no call is charged to two of them:
the api's calls go to the batch whose job it is creating, the dispatcher's to the batch its tick
dispatches, the worker's and its event source mapping's to the batch executing then (each ahead batch
runs 20 s after the one before, a soon batch while the dispatcher dispatches). Each figure is the median
over the repetitions (``median``), with the lowest and highest of the headline ones (``spread``),
and pooled over all of them (``pooled``).

The worker's hold (``hold_ms``: a run's due time minus the moment its message reached the worker,
negative when it arrived late) is read from the worker's outcome log lines ("run succeeded", "run
failed", "retry scheduled") and reported beside the worker's billed duration, which it explains
(the worker waits out the hold): each line is the scenario's whose jobs it ran (by ``job_id``; for
the crons, whose jobs every repetition shares, also by the repetition's worker interval). The billed
duration itself stays the measured invocations'.

Capacity units are computed from the item sizes by DynamoDB's rules and price the jobs; what the
emulator reports (``ReturnConsumedCapacity``) is recorded next to them: moto's figures are fixed
per request, whatever the size, and absent for TransactWriteItems.

The dispatcher's sweep costs the same per tick whether there is work or not; that fixed cost is
measured on idle ticks (nothing in their window), subtracted from the per-job figures and reported
per month instead. A sent trigger stays in its bucket, so the ticks after its dispatch read it again
(and check that its run exists) until their cursor passes its minute: what those ticks spend beyond
an idle tick is shared by all executed jobs (``rescans_per_job``). The
local SQS pollers long-poll with a 2 s wait, so their empty receives say nothing about AWS (Lambda's
event source mapping polls on its own schedule); receives that returned messages and the deletes
that follow are counted per job, empty ones are reported apart.

    python -m bench.cost [--repetitions 3]
"""

from __future__ import annotations

from bench.cost.analysis import HEADLINE, _aggregate
from bench.cost.hold import _holds_of, _outcome_lines, hold_median, hold_summary
from bench.cost.report import hold_line, report
from bench.cost.runner import run
from bench.cost.scenarios import Scenario

__all__ = [
    "HEADLINE",
    "Scenario",
    "_aggregate",
    "_holds_of",
    "_outcome_lines",
    "hold_line",
    "hold_median",
    "hold_summary",
    "report",
    "run",
]
