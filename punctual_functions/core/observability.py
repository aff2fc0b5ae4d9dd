"""Logger and metrics, created once per process.

Every log line about a run carries ``job_id`` and ``run_id`` (passed as ``extra``; the dispatcher's
one line a send lists its runs as ``job_id/run_id``), so one run's story can be read across the api,
dispatcher and worker logs. At INFO a run writes few lines (its dispatch's share and its outcome,
which carries the lateness): CloudWatch bills log lines by the byte (docs/benchmarks.md, "Cost"). X-Ray
tracing is switched on per function in the infrastructure rather than through an SDK import, which
keeps cold starts small.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

logger = Logger(service="punctual")
