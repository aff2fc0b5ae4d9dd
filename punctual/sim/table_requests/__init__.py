"""The DynamoDB requests behind each call of the table port, with their capacity units per partition.

For a call of a ``punctual_functions.core.ports.Tables`` method on the in-memory fake
(``punctual.testing.fakes.store``),
:func:`requests_for` gives the requests ``punctual_functions.core.store.DynamoStore`` makes for it, in order,
with the units each consumes on every partition key value it touches: the base table's (``JOB#<id>``,
``T#<bucket>#<shard>``, ...) and the owner index's (``gsi1:OWNER#<owner>``). For each call (the
outermost only)::

    before = snapshot(store, method, args, kwargs)   # the items it may write, as they are
    result = <the call>                               # or the exception it raised
    requests = requests_for(method, args, kwargs, result, before, store)

DynamoDB's rules, as ``bench/cost/`` applies them: a write is 1 WCU per started KB of the larger of
the item before and after (a put: the item replaced and the one written; a refused update: the item
as it is; a delete: the item deleted), doubled in a transaction, charged when refused too (a refused
transaction charges every item); a write that changes a job item writes its owner-index entry too
(projection ALL), a standard write as ``bench/cost/`` counts it. A read is 1 RCU per started 4 KB
per item (GetItem, BatchGetItem), a query request 1 RCU per started 4 KB of the items it read (before
its filter; at most 1 MB); eventually consistent halves (the owner index always is); a missing item
or an empty page costs the minimum. Item sizes: the items ``punctual_functions/core/store/items.py`` builds,
measured with ``punctual.scale.sizes.item_size``.
"""

from __future__ import annotations

from punctual.sim.table_requests.entry import requests_for, snapshot
from punctual.sim.table_requests.units import Before, PartitionUnits, StateView, TableRequest

__all__ = ["Before", "PartitionUnits", "StateView", "TableRequest", "requests_for", "snapshot"]
