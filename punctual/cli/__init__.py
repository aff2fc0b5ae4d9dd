"""The ``punctual`` command line: a client for the API, and the local stack.

One module per command group: ``common`` (the root group ``main``, ``Context``, ``api_command``,
option helpers), ``calendars`` (business calendars), ``jobs`` (with ``jobs_bulk``, its commands
over many jobs, ``jobs_runs``, a job's history and its watch, and ``jobs_trail``, its audit trail),
``limits`` (target limits),
``runs``, ``schedule``, ``stats``,
``config``, ``console``, ``local`` and ``dlq`` (which talks to SQS and DynamoDB directly), ``plan``
(the capacity planner); ``stack`` reads a deployed stack's outputs.
Importing each command module attaches its commands to ``main``.

Exit codes: 0 success; 1 the API refused the request (4xx); 2 bad usage; 3 not found; 4 conflict with
the job's state (409); 5 the API could not be reached or failed (5xx).
"""

from punctual.cli import (
    calendars,
    config,
    console,
    dlq,
    jobs,
    jobs_bulk,
    jobs_runs,
    jobs_trail,
    limits,
    local,
    plan,
    runs,
    schedule,
    stats,
)
from punctual.cli.common import (
    EXIT_CONFLICT,
    EXIT_NOT_FOUND,
    EXIT_REFUSED,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    Context,
    api_command,
    main,
    parse_when,
)

__all__ = [
    "EXIT_CONFLICT",
    "EXIT_NOT_FOUND",
    "EXIT_REFUSED",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "Context",
    "api_command",
    "calendars",
    "config",
    "console",
    "dlq",
    "jobs",
    "jobs_bulk",
    "jobs_runs",
    "jobs_trail",
    "limits",
    "local",
    "main",
    "parse_when",
    "plan",
    "runs",
    "schedule",
    "stats",
]
