"""What keeps an answer that lists jobs within Lambda's 6 MB.

A function's answer to API Gateway is at most 6 MB, and the body is a JSON string inside that JSON
answer: every quote and backslash of it counts twice. A page of 100 jobs whose payloads near the
64 KiB a request may hold, or a bulk action over 500 tagged jobs, would pass it, and the caller
would get a 502 (after a bulk action had acted). So ``GET /v1/jobs`` and ``POST /v1/jobs/bulk``
count each job's answer as they read it (``AnswerBudget``, the listing's ``keep``) and end the page
before the job that would pass ``ANSWER_BYTES``: the page then holds fewer jobs than ``limit`` and
its ``next_cursor`` starts with that job.
"""

from __future__ import annotations

import json
from typing import Any, Final

from punctual_functions.core.model import Job
from punctual_functions.core.ports import PageFull

LAMBDA_ANSWER_BYTES: Final = 6 * 1024 * 1024
# The part of it a page of jobs may take: the rest is the answer's envelope (status, headers), the
# page's own fields, and the margin of an estimate.
ANSWER_BYTES: Final = 4 * 1024 * 1024
# A job's view besides the fields counted one by one (ids, schedule, times, status, recent runs), as
# the answer holds it (escaped once more).
_VIEW_BYTES: Final = 8 * 1024


def _escaped(value: Any) -> int:
    """The bytes ``value`` takes in the answer: its JSON, as a string inside the answer's JSON."""
    if value is None:
        return 0
    return len(json.dumps(json.dumps(value, default=str)).encode())


def job_answer_bytes(job: Job) -> int:
    """A bound of what ``job``'s view takes in a Lambda answer."""
    sized = (job.payload, job.tags, job.target, job.dead_letter, job.name, job.pause_note)
    alerts = job.alerts.target if job.alerts is not None else None
    return _VIEW_BYTES + sum(_escaped(value) for value in sized) + _escaped(alerts)


class AnswerBudget:
    """``take(job)`` for each job a page keeps; raises ``PageFull`` once the page would pass
    ``limit`` bytes (never for its first job)."""

    def __init__(self, limit: int = ANSWER_BYTES) -> None:
        self.left = limit
        self.taken = 0

    def take(self, job: Job) -> None:
        size = job_answer_bytes(job)
        if self.taken and size > self.left:
            raise PageFull
        self.left -= size
        self.taken += 1
