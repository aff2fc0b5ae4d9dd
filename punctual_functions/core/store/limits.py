"""Target limits in the table (docs/architecture.md, "Target limits"): one item per limit
(``LIMIT#<owner>`` / ``<name>``) and, per limit (or job with its own ``max_concurrent``), a partition
``SLOT#<owner>#<name>`` holding its slots (``S#<nnnn>``: a holder and a lease), its token bucket
(``B``) and the runs waiting on it (``W#<job_id>#<run_id>``). Every take is a conditional write."""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Mapping
from datetime import datetime, timedelta
from typing import Any

from punctual_functions.core import limits as rules
from punctual_functions.core.limits import Bucket, Limit, LimitUse, Slot, TokenTaken, Waiter
from punctual_functions.core.model import Job, Reason, Run, from_ms, to_ms
from punctual_functions.core.ports import LimitExists, VersionChanged
from punctual_functions.core.resources import PK, SK, TTL_ATTRIBUTE
from punctual_functions.core.store.items import job_from_item, run_from_item
from punctual_functions.core.store.keys import job_key, run_key
from punctual_functions.core.store.runs import RunTable

# The owner's limits in one item beside them (``LIMIT#<owner>`` / ``#``: the API rewrites it with each
# change), which a worker reads with its batch's runs and jobs: no request of its own.
SUMMARY = "#"
# How many times a take reads the slots again after losing a race for one (a slot take: this many
# beyond the limit's max_concurrent).
TAKE_ROUNDS = 3
# How many refused hand-overs a release makes beyond the limit's max_concurrent (a run another
# release just handed a slot to, a slot taken meanwhile) before it frees what it has not handed over.
HAND_OVER_MISSES = 5
# Slot, bucket and waiter items expire (TTL) this long after they last mattered.
LIMIT_ITEM_TTL = timedelta(days=1)
BUCKET = "B"
SLOT_PREFIX = "S#"
WAITER_PREFIX = "W#"


def limit_key(owner: str, name: str) -> dict[str, Any]:
    return {PK: {"S": f"LIMIT#{owner}"}, SK: {"S": name}}


def slots_pk(owner: str, name: str) -> str:
    return f"SLOT#{owner}#{name}"


def slot_sk(index: int) -> str:
    return f"{SLOT_PREFIX}{index:04d}"


def waiter_sk(job_id: str, run_id: str) -> str:
    return f"{WAITER_PREFIX}{job_id}#{run_id}"


def limit_to_item(owner: str, limit: Limit) -> dict[str, Any]:
    item: dict[str, Any] = {
        **limit_key(owner, limit.name),
        "type": {"S": "limit"},
        "match": {"S": limit.match},
        "version": {"N": str(limit.version)},
    }
    if limit.max_concurrent is not None:
        item["max_concurrent"] = {"N": str(limit.max_concurrent)}
    if limit.per_second is not None:
        item["per_second"] = {"N": repr(round(float(limit.per_second), 6))}
    if limit.burst is not None:
        item["burst"] = {"N": str(limit.burst)}
    if limit.created_at is not None:
        item["created_at"] = {"N": str(to_ms(limit.created_at))}
    if limit.updated_at is not None:
        item["updated_at"] = {"N": str(to_ms(limit.updated_at))}
    return item


def _n(item: Mapping[str, Any], name: str) -> str | None:
    value = item.get(name)
    return None if value is None else str(value["N"])


def summary_key(owner: str) -> dict[str, Any]:
    return limit_key(owner, SUMMARY)


def summary_text(limits: list[Limit]) -> str:
    """The summary item's ``limits``: what a worker needs of each, as compact JSON."""
    specs = [{key: value for key, value in limit.to_dict().items() if value is not None} for limit in limits]
    return json.dumps(specs, separators=(",", ":"), sort_keys=True)


def limits_of_summary(item: Mapping[str, Any]) -> list[Limit]:
    return [Limit(**spec) for spec in json.loads(item["limits"]["S"])]


def limit_from_item(item: Mapping[str, Any]) -> Limit:
    def number(name: str) -> int | None:
        value = _n(item, name)
        return None if value is None else int(value)

    per_second = _n(item, "per_second")
    created, updated = number("created_at"), number("updated_at")
    return Limit(
        name=item[SK]["S"],
        match=item["match"]["S"],
        max_concurrent=number("max_concurrent"),
        per_second=None if per_second is None else float(per_second),
        burst=number("burst"),
        version=number("version") or 1,
        created_at=None if created is None else from_ms(created),
        updated_at=None if updated is None else from_ms(updated),
    )


def slot_from_item(item: Mapping[str, Any]) -> Slot:
    taken = _n(item, "taken_at")
    return Slot(
        index=int(item[SK]["S"][len(SLOT_PREFIX) :]),
        holder=item["holder"]["S"],
        lease_until=from_ms(int(item["lease_until"]["N"])),
        taken_at=None if taken is None else from_ms(int(taken)),
        job_id=item["job_id"]["S"] if "job_id" in item else None,
    )


def _waiter_of(item: Mapping[str, Any]) -> Waiter:
    return Waiter(item["job_id"]["S"], item["run_id"]["S"], from_ms(int(item["since"]["N"])))


def _ttl(moment: datetime) -> dict[str, str]:
    return {"N": str(int((moment + LIMIT_ITEM_TTL).timestamp()))}


def _unchanged(seen: Slot | None) -> dict[str, Any]:
    """The condition of a hand-over's write: the slot is as the release read it."""
    if seen is None:
        return {"ConditionExpression": "attribute_not_exists(pk)"}
    return {
        "ConditionExpression": "holder = :holder AND lease_until = :lease_until",
        "ExpressionAttributeValues": {
            ":holder": {"S": seen.holder},
            ":lease_until": {"N": str(to_ms(seen.lease_until))},
        },
    }


def _slot_item(
    pk: str, index: int, holder: str, job_id: str, now: datetime, lease_until: datetime
) -> dict[str, Any]:
    return {
        PK: {"S": pk},
        SK: {"S": slot_sk(index)},
        "holder": {"S": holder},
        "job_id": {"S": job_id},
        "lease_until": {"N": str(to_ms(lease_until))},
        "taken_at": {"N": str(to_ms(now))},
        TTL_ATTRIBUTE: _ttl(lease_until),
    }


class LimitTable(RunTable):
    """``punctual_functions.core.ports.LimitStore`` on DynamoDB."""

    def get_runs_jobs_and_limits(
        self, keys: list[tuple[str, str]], owners: Collection[str]
    ) -> tuple[dict[tuple[str, str], Run], dict[str, Job], dict[str, list[Limit]]]:
        pairs = list(dict.fromkeys(keys))
        wanted = [run_key(job_id, run_id) for job_id, run_id in pairs]
        wanted += [job_key(job_id) for job_id in dict.fromkeys(job_id for job_id, _ in pairs)]
        wanted += [summary_key(owner) for owner in dict.fromkeys(owners)]
        runs: dict[tuple[str, str], Run] = {}
        jobs: dict[str, Job] = {}
        limits: dict[str, list[Limit]] = {owner: [] for owner in owners}
        for item in self.read_consistently(wanted):
            sk = item[SK]["S"]
            if sk.startswith("RUN#"):
                run = run_from_item(item)
                runs[(run.job_id, run.run_id)] = run
            elif sk == SUMMARY and item[PK]["S"].startswith("LIMIT#"):
                limits[item[PK]["S"][len("LIMIT#") :]] = limits_of_summary(item)
            else:
                job = job_from_item(item)
                jobs[job.job_id] = job
        return runs, jobs, limits

    def get_limit(self, owner: str, name: str) -> Limit | None:
        item = self.client.get_item(
            TableName=self.table, Key=limit_key(owner, name), ConsistentRead=True
        ).get("Item")
        return None if item is None else limit_from_item(item)

    def list_limits(self, owner: str) -> list[Limit]:
        items = self._partition(f"LIMIT#{owner}", None)
        return [limit_from_item(item) for item in items if item[SK]["S"] != SUMMARY]

    def put_limit(self, owner: str, limit: Limit, *, expected_version: int | None) -> None:
        if expected_version is None:
            if not self.conditional(
                self.client.put_item,
                Item=limit_to_item(owner, limit),
                ConditionExpression="attribute_not_exists(pk)",
            ):
                raise LimitExists(f"limit {limit.name} exists")
            self._summarise(owner)
            return
        if not self.conditional(
            self.client.put_item,
            Item=limit_to_item(owner, limit),
            ConditionExpression="version = :seen",
            ExpressionAttributeValues={":seen": {"N": str(expected_version)}},
        ):
            raise VersionChanged(f"limit {limit.name} changed")
        self._summarise(owner)

    def delete_limit(self, owner: str, name: str) -> bool:
        deleted = self.conditional(
            self.client.delete_item, Key=limit_key(owner, name), ConditionExpression="attribute_exists(pk)"
        )
        self._summarise(owner)  # also after a delete that found nothing: a summary a crash left behind
        return deleted

    def _summarise(self, owner: str) -> None:
        """Rewrite the owner's summary from its limits as they are now, unless another writer
        rewrote it meanwhile (then read again: the last writer's view wins)."""
        for _ in range(TAKE_ROUNDS):
            items = self._partition(f"LIMIT#{owner}", None)
            seen = next((item for item in items if item[SK]["S"] == SUMMARY), None)
            limits = [limit_from_item(item) for item in items if item[SK]["S"] != SUMMARY]
            condition: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(pk)"}
            if seen is not None:
                condition = {
                    "ConditionExpression": "written = :seen",
                    "ExpressionAttributeValues": {":seen": seen["written"]},
                }
            written = int(seen["written"]["N"]) + 1 if seen is not None else 1
            if self.conditional(
                self.client.put_item,
                Item={
                    **summary_key(owner),
                    "limits": {"S": summary_text(limits)},
                    "written": {"N": str(written)},
                },
                **condition,
            ):
                return
        raise VersionChanged(f"the limits of {owner} kept changing")

    def limit_use(self, owner: str, name: str) -> LimitUse:
        slots: list[Slot] = []
        waiting: list[Waiter] = []
        bucket = None
        for item in self._partition(slots_pk(owner, name), None):
            sk = item[SK]["S"]
            if sk.startswith(SLOT_PREFIX):
                slots.append(slot_from_item(item))
            elif sk.startswith(WAITER_PREFIX):
                waiting.append(_waiter_of(item))
            elif sk == BUCKET:
                bucket = Bucket(float(item["tokens"]["N"]), from_ms(int(item["counted_at"]["N"])))
        waiting.sort(key=lambda waiter: (waiter.since, waiter.run_id))
        return LimitUse(tuple(slots), bucket, tuple(waiting))

    def take_slot(
        self,
        owner: str,
        name: str,
        max_concurrent: int,
        *,
        holder: str,
        job_id: str,
        now: datetime,
        lease_until: datetime,
    ) -> bool:
        pk = slots_pk(owner, name)
        now = from_ms(to_ms(now))  # as stored: milliseconds
        # A race lost means another taker got that slot: read again while one looks free (each round
        # that loses, one fewer is), so that a refusal means the limit was full, not that it was busy.
        for _ in range(TAKE_ROUNDS + max_concurrent):
            slots = [slot_from_item(item) for item in self._partition(pk, SLOT_PREFIX)]
            handed = rules.handed_to(slots, holder, now)
            if handed is not None:  # handed over to this run: claimed by one of its deliveries
                index, condition = handed.index, "holder = :handed"
                values = {":handed": {"S": handed.holder}}
            else:
                found = rules.choose_slot(slots, max_concurrent, holder, now)
                if found is None:
                    return False
                index, condition = (
                    found,
                    "attribute_not_exists(pk) OR lease_until <= :now OR holder = :holder",
                )
                values = {":now": {"N": str(to_ms(now))}, ":holder": {"S": holder}}
            if self.conditional(
                self.client.put_item,
                Item=_slot_item(pk, index, holder, job_id, now, lease_until),
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
            ):
                return True
        return False

    def release_slot(
        self, owner: str, name: str, *, holder: str, max_concurrent: int | None, now: datetime
    ) -> list[Waiter]:
        pk = slots_pk(owner, name)
        now = from_ms(to_ms(now))  # as stored: milliseconds
        items = self._partition(pk, None)
        slots = [slot_from_item(item) for item in items if item[SK]["S"].startswith(SLOT_PREFIX)]
        mine = [slot for slot in slots if rules.holds(slot, holder)]
        if not mine:
            return []
        line = rules.in_turn(
            [_waiter_of(item) for item in items if item[SK]["S"].startswith(WAITER_PREFIX)],
            holder,
            max_concurrent or 1,
        )
        lease_until = now + timedelta(seconds=rules.HANDOFF_SECONDS)
        handed: list[Waiter] = []
        given: set[int] = set()
        misses = 0
        for place in rules.hand_over_places(slots, max_concurrent, holder, now):
            # A miss means another release handed that run a slot (releases at the same moment start
            # at different places in line, so they seldom do): bounded by the slots.
            while line and misses < HAND_OVER_MISSES + (max_concurrent or 0):
                waiter = line.pop(0)
                to = rules.handed_holder(waiter.run_id, uuid.uuid4().hex[:12])
                hand_over: list[Any] = [
                    {
                        "Put": {
                            "TableName": self.table,
                            "Item": _slot_item(pk, place.index, to, waiter.job_id, now, lease_until),
                            **_unchanged(place.seen),
                        }
                    },
                    {
                        "Delete": {
                            "TableName": self.table,
                            "Key": {PK: {"S": pk}, SK: {"S": waiter_sk(waiter.job_id, waiter.run_id)}},
                            "ConditionExpression": "attribute_exists(pk)",
                        }
                    },
                ]
                refused = self.transact(hand_over)
                if refused is None:
                    handed.append(waiter)
                    given.add(place.index)
                    break
                misses += 1
                if refused.failed(0):  # the slot changed (taken): the waiter keeps its turn
                    line.insert(0, waiter)
                    break
                # That run was handed a slot by another release meanwhile (its waiter item is
                # gone), or another write held the items: the next one.
        for slot in mine:
            if slot.index not in given:
                self.conditional(
                    self.client.delete_item,
                    Key={PK: {"S": pk}, SK: {"S": slot_sk(slot.index)}},
                    ConditionExpression="holder = :holder",
                    ExpressionAttributeValues={":holder": {"S": slot.holder}},
                )
        return handed

    def take_token(self, owner: str, name: str, per_second: float, burst: int, *, now: datetime) -> float:
        key = {PK: {"S": slots_pk(owner, name)}, SK: {"S": BUCKET}}
        now = from_ms(to_ms(now))  # as stored: milliseconds
        for _ in range(TAKE_ROUNDS):
            item = self.client.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")
            seen = (
                None
                if item is None
                else Bucket(float(item["tokens"]["N"]), from_ms(int(item["counted_at"]["N"])))
            )
            decision = rules.take_token(seen, now, per_second, burst)
            if not isinstance(decision, TokenTaken):
                return decision.wait_seconds
            condition: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(pk)"}
            if item is not None:
                condition = {
                    "ConditionExpression": "counted_at = :seen_at AND tokens = :seen_tokens",
                    "ExpressionAttributeValues": {
                        ":seen_at": item["counted_at"],
                        ":seen_tokens": item["tokens"],
                    },
                }
            if self.conditional(
                self.client.put_item,
                Item={
                    **key,
                    "tokens": {"N": repr(round(decision.bucket.tokens, 6))},
                    "counted_at": {"N": str(to_ms(decision.bucket.counted_at))},
                    TTL_ATTRIBUTE: _ttl(now),
                },
                **condition,
            ):
                return 0.0
        return 1.0 / per_second

    def add_waiter(self, owner: str, name: str, run: Run, *, since: datetime) -> None:
        self.client.put_item(
            TableName=self.table,
            Item={
                PK: {"S": slots_pk(owner, name)},
                SK: {"S": waiter_sk(run.job_id, run.run_id)},
                "job_id": {"S": run.job_id},
                "run_id": {"S": run.run_id},
                "since": {"N": str(to_ms(since))},
                TTL_ATTRIBUTE: _ttl(since),
            },
        )

    def remove_waiter(self, owner: str, name: str, run: Run) -> None:
        self.client.delete_item(
            TableName=self.table,
            Key={PK: {"S": slots_pk(owner, name)}, SK: {"S": waiter_sk(run.job_id, run.run_id)}},
        )

    def mark_limited(self, run: Run, limit: str, *, since: datetime) -> bool:
        return self.conditional(
            self.client.update_item,
            Key=run_key(run.job_id, run.run_id),
            UpdateExpression="SET #reason = :limited, limited_by = :limit, limited_since = :since",
            ConditionExpression="#status = :seen_status AND job_version = :seen_version",
            ExpressionAttributeNames={"#status": "status", "#reason": "reason"},
            ExpressionAttributeValues={
                ":limited": {"S": Reason.LIMITED.value},
                ":limit": {"S": limit},
                ":since": {"N": str(to_ms(since))},
                ":seen_status": {"S": run.status.value},
                ":seen_version": {"N": str(run.job_version)},
            },
        )

    def _partition(self, pk: str, prefix: str | None) -> list[dict[str, Any]]:
        """Every item of partition ``pk`` (with a sort key starting with ``prefix``), consistent."""
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk" + (" AND begins_with(sk, :prefix)" if prefix else ""),
            "ExpressionAttributeValues": {":pk": {"S": pk}, **({":prefix": {"S": prefix}} if prefix else {})},
            "ConsistentRead": True,
        }
        items: list[dict[str, Any]] = []
        while True:
            response = self.client.query(**request)
            items += response.get("Items", [])
            last = response.get("LastEvaluatedKey")
            if not last:
                return items
            request["ExclusiveStartKey"] = last
