"""DynamoDB access: the item layout of docs/architecture.md and every conditional write.

The only code that knows keys and attribute names. One module per concern: ``keys`` (every item's
key), ``items`` (item ↔ domain object), ``pages`` (cursors and filtered listings), ``base`` (the
client, conditional writes and "did our write land"), and one module per aggregate: ``jobs``,
``triggers`` (with the sweep cursors), ``runs``, ``calendars``, ``limits`` and ``deployment`` (the
allow-list of targets). ``DynamoStore`` is all six: the real implementation of
``punctual_functions.core.ports.Tables``.

Conditional writes are what make the system correct with several dispatchers and workers: a run's
creation, an attempt start and an outcome each succeed for exactly one writer.
"""

from __future__ import annotations

from punctual_functions.core.ports import BadCursorError, ConflictError
from punctual_functions.core.store.calendars import CalendarTable
from punctual_functions.core.store.deployment import DeploymentTable
from punctual_functions.core.store.jobs import JobTable
from punctual_functions.core.store.limits import LimitTable
from punctual_functions.core.store.runs import RunTable
from punctual_functions.core.store.trail import TrailTable
from punctual_functions.core.store.triggers import TriggerTable

__all__ = ["BadCursorError", "ConflictError", "DynamoStore", "Store"]


class DynamoStore(JobTable, TrailTable, TriggerTable, LimitTable, RunTable, CalendarTable, DeploymentTable):
    """Jobs with their audit trail, triggers with cursors, runs, business calendars, target limits and
    the deployment's allow-list of targets and delivery rights, in one DynamoDB table."""


Store = DynamoStore
