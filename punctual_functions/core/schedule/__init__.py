"""Job schedules: parsing user input, and computing fire times.

A schedule is a one-off ``at`` time, a ``cron`` expression (Unix 5-field, 6-field with a leading
seconds field, or EventBridge ``cron(...)``) or a fixed ``rate``. Everything here is plain Python so
the API (validation, the ``upcoming`` preview) and the dispatcher (the next fire time, on its hot path)
agree on one definition of "when does this job fire".

Library choice: croniter (already a runtime dependency, maintained, and the only mainstream Python
cron library with a seconds field, ``L``, ``W`` and ``#``). It is used purely as a *naive wall-clock*
iterator; this module adds the thin glue for what it lacks or gets wrong for us:

* Our own field parser validates every field so users get a reason naming the field and the token
  (croniter's messages name neither), refuses croniter's non-standard extensions (``H``, ``R``,
  wrapping ranges), and hands croniter a canonical numeric expression. EventBridge's day-of-week
  numbering (1-7 = SUN-SAT), its ``L``/``nL`` day-of-week forms and ``?`` are translated here.
* The EventBridge year field is filtered here (jumping straight to the next allowed year), because
  croniter's year support stops at 2099 and fails on year ranges combined with a fixed date.
* ``LW`` (last weekday of the month) is filtered here; croniter has no such token.
* Time zones: croniter's own DST handling moves a skipped time by whole minutes and does not give the
  contract below, so croniter only ever sees naive local times and the mapping to UTC is done here.

``cronsim`` was the alternative (it knows ``LW`` and ``5L``) but has neither seconds nor years, so it
would need more glue, plus a new dependency.

DST contract: cron fields match local wall-clock time in ``timezone``. A wall time skipped by a
spring-forward transition fires once, at the transition instant (several skipped slots collapse into
that one firing, also with a slot at the first valid wall time). A wall time repeated by a fall-back
transition fires once, at its first occurrence. The fire times are strictly increasing in UTC.

Day-of-month and day-of-week in the Unix dialects follow POSIX/Vixie: when both are restricted (neither
is ``*``), a day matches if either matches.
"""

from __future__ import annotations

from punctual_functions.core.schedule.common import ScheduleError, ScheduleKind, parse_instant
from punctual_functions.core.schedule.plans import DstMark, Schedule, parse_schedule

__all__ = ["DstMark", "Schedule", "ScheduleError", "ScheduleKind", "parse_instant", "parse_schedule"]
