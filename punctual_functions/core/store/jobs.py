"""Jobs: the job item, its name reservation and its idempotency record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from punctual_functions.core.model import Job, JobStatus, Trigger, from_ms, to_ms
from punctual_functions.core.ports import IdempotencyKeyTaken, JobExists, NameTaken, VersionChanged
from punctual_functions.core.resources import GSI1, GSI1_PK, TTL_ATTRIBUTE
from punctual_functions.core.store.items import (
    as_stored_job,
    embeds,
    job_from_item,
    job_to_item,
    trigger_to_item,
)
from punctual_functions.core.store.keys import (
    idempotency_key,
    in_job_listing,
    job_key,
    name_key,
    owner_index_pk,
)
from punctual_functions.core.store.pages import read_page
from punctual_functions.core.store.trail import TrailTable, put_change_item
from punctual_functions.core.trail import Change

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import TransactWriteItemTypeDef

IDEMPOTENCY_TTL = timedelta(hours=24)

# The attributes the API owns; the dispatcher and worker update the others concurrently.
API_OWNED = (
    "name",
    "status",
    "version",
    "revision",
    "schedule",
    "target",
    "payload",
    "retry",
    "timeout_seconds",
    "tags",
    "secret",
    "misfire",
    "catchup_seconds",
    "overlap",
    "calendar",
    "on_excluded",
    "jitter_seconds",
    "paused_at",
    "pause_note",
    "paused_by",
    "pause_until",
    "pause_on_failures",
    "max_concurrent",
    "max_runs",
    "alerts",
    "dead_letter",
    "on_complete",
    "delete_after_days",
    "updated_at",
)


def put_name(table: str, job: Job, replacing: str | None = None) -> TransactWriteItemTypeDef:
    """Reserve the job's name among its owner's live jobs; ``replacing`` is the id of an ended job
    still holding it (a one-off job's name is freed lazily, by the next job that wants it)."""
    assert job.name is not None
    put: dict[str, Any] = {
        "TableName": table,
        "Item": {
            **name_key(job.owner, job.name),
            "job_id": {"S": job.job_id},
            "reserved_at": {"N": str(to_ms(job.updated_at))},
        },
        # A retry of the same create (the same job id) finds its own reservation.
        "ConditionExpression": "attribute_not_exists(pk) OR job_id = :own",
        "ExpressionAttributeValues": {":own": {"S": job.job_id}},
    }
    if replacing is not None:
        put["ConditionExpression"] += " OR job_id = :ended"
        put["ExpressionAttributeValues"][":ended"] = {"S": replacing}
    return {"Put": put}  # type: ignore[typeddict-item]


def release_name(table: str, job: Job) -> TransactWriteItemTypeDef:
    """Free the job's name (if it still holds it)."""
    assert job.name is not None
    return {
        "Delete": {
            "TableName": table,
            "Key": name_key(job.owner, job.name),
            "ConditionExpression": "attribute_not_exists(pk) OR job_id = :job_id",
            "ExpressionAttributeValues": {":job_id": {"S": job.job_id}},
        }
    }


def put_trigger_item(table: str, trigger: Trigger) -> TransactWriteItemTypeDef:
    return {"Put": {"TableName": table, "Item": trigger_to_item(trigger)}}


def api_view(job: Job) -> Job:
    """A job without the fields the dispatcher and worker maintain (compare what the API writes)."""
    return replace(job, next_trigger_at=None)


class JobTable(TrailTable):
    def create_job(
        self,
        job: Job,
        first_trigger: Trigger | None,
        idempotency: tuple[str, str] | None = None,
        *,
        replacing_name_of: str | None = None,
        change: Change | None = None,
    ) -> None:
        """Idempotency record, name, first trigger, then the job: single conditional writes in an
        order that leaves nothing half-made behind a crash (docs/architecture.md, "The write path").

        A record or a name whose job never appeared is taken over by a retry of the same create (the
        same job id) or, after ``ORPHAN_GRACE``, by another job; a trigger whose job never appeared
        is deleted by the dispatcher after the same grace. ``idempotency`` is (key, request
        fingerprint). Raises ``IdempotencyKeyTaken``, ``NameTaken`` or ``JobExists``.
        """
        now_s = str(int(job.created_at.timestamp()))
        if idempotency is not None:
            key, fingerprint = idempotency
            expires = int((job.created_at + IDEMPOTENCY_TTL).timestamp())
            if not self.conditional(
                self.client.put_item,
                Item={
                    **idempotency_key(job.owner, key),
                    "job_id": {"S": job.job_id},
                    "fingerprint": {"S": fingerprint},
                    TTL_ATTRIBUTE: {"N": str(expires)},
                },
                ConditionExpression="attribute_not_exists(pk) OR #expires < :now OR job_id = :job_id",
                ExpressionAttributeNames={"#expires": TTL_ATTRIBUTE},
                ExpressionAttributeValues={":now": {"N": now_s}, ":job_id": {"S": job.job_id}},
            ):
                raise IdempotencyKeyTaken()
        name = put_name(self.table, job, replacing_name_of)["Put"] if job.name else None
        if name is not None and not self.conditional(
            self.client.put_item, **{k: v for k, v in name.items() if k != "TableName"}
        ):
            if idempotency is not None:
                # Nothing was created: the key may serve another request now.
                self.conditional(
                    self.client.delete_item,
                    Key=idempotency_key(job.owner, idempotency[0]),
                    ConditionExpression="job_id = :job_id",
                    ExpressionAttributeValues={":job_id": {"S": job.job_id}},
                )
            raise NameTaken()
        if change is not None:
            # Before the job: a create that dies here leaves a record of a job that does not exist
            # (invisible, finished by the create's retry), never a job without its record.
            self.put_change(change)
        # A one-off job at its home is its own first trigger: one item (docs/architecture.md).
        inside = first_trigger if embeds(job, first_trigger) else None
        if first_trigger is not None and inside is None:
            self.put_trigger_item(first_trigger)
        created = self.conditional(
            self.client.put_item,
            Item=job_to_item(job, inside),
            ConditionExpression="attribute_not_exists(pk)",
        )
        if created:
            return
        # Job ids are random, so nobody else writes this job: finding it is finding our own write.
        if self.landed(
            lambda: self.get_job(job.job_id),
            lambda stored: stored.owner == job.owner and stored.created_at == as_stored_job(job).created_at,
        ):
            return
        raise JobExists()

    def put_trigger_item(self, trigger: Trigger) -> None:
        self.client.put_item(TableName=self.table, Item=trigger_to_item(trigger))

    def get_idempotent_create(self, owner: str, key: str, now: datetime) -> tuple[str, str] | None:
        """(job_id, fingerprint) of an earlier create with this ``Idempotency-Key``, if still valid."""
        response = self.client.get_item(
            TableName=self.table, Key=idempotency_key(owner, key), ConsistentRead=True
        )
        item = response.get("Item")
        if not item or int(item[TTL_ATTRIBUTE]["N"]) < int(now.timestamp()):
            return None
        return item["job_id"]["S"], item["fingerprint"]["S"]

    def update_job(
        self,
        before: Job,
        after: Job,
        *,
        trigger: Trigger | None = None,
        replacing_name_of: str | None = None,
        change: Change | None = None,
    ) -> None:
        """Write a change made through the API (or by Punctual itself: a pause after failures, the end
        of a pause), guarded by the version and the revision that were read.

        Only the fields the API owns are written (the dispatcher updates ``next_trigger_at``
        concurrently). A changed name moves its reservation; a job that
        stops being live releases it; ``trigger`` is the first trigger of a new schedule; ``change``,
        the change's record in the audit trail, lands with it or not at all. The job is written at
        the revision after ``before``'s, which ``change`` must carry.
        """
        after = replace(after, revision=before.revision + 1)
        if change is not None and change.revision != after.revision:
            raise ValueError(f"the change's revision {change.revision} is not the job's {after.revision}")
        item = job_to_item(after)
        owned = list(API_OWNED)
        if after.version != before.version:
            # The dispatcher maintains next_trigger_at for the current version; a new version resets it.
            owned += ["next_trigger_at"]
        names: dict[str, str] = {}
        values: dict[str, Any] = {":seen_version": {"N": str(before.version)}}
        if before.revision:
            revision_condition = "revision = :seen_revision"
            values[":seen_revision"] = {"N": str(before.revision)}
        else:  # a job made before the trail: its first change is its first revision
            revision_condition = "attribute_not_exists(revision)"
        sets: list[str] = []
        removes: list[str] = []
        for index, attribute in enumerate(owned):
            names[f"#a{index}"] = attribute
            if attribute in item:
                sets.append(f"#a{index} = :v{index}")
                values[f":v{index}"] = item[attribute]
            else:
                removes.append(f"#a{index}")
        expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        items: list[TransactWriteItemTypeDef] = [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": job_key(before.job_id),
                    "UpdateExpression": expression,
                    "ConditionExpression": "version = :seen_version AND " + revision_condition,
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": values,
                }
            }
        ]
        if before.name and before.is_live and (after.name != before.name or not after.is_live):
            items.append(release_name(self.table, before))
        if after.name and after.is_live and (after.name != before.name or not before.is_live):
            items.append(put_name(self.table, after, replacing_name_of))
        if trigger is not None:
            items.append(put_trigger_item(self.table, trigger))
        if change is not None:
            items.append(put_change_item(self.table, change, self.trail_expiry(change)))
        refused = self.transact(items)
        if refused is None:
            return
        if self.landed(
            lambda: self.get_job(after.job_id),
            lambda stored: api_view(before) != api_view(stored) == api_view(as_stored_job(after)),
        ):
            return  # our own write, whose answer was lost and retried
        if refused.failed(0):
            raise VersionChanged() from refused.error
        raise NameTaken() from refused.error

    def complete_job(self, job: Job, expires_at: datetime | None = None) -> bool:
        """End a recurring job whose schedule ran out or reached ``max_runs`` (its last occurrence was
        dispatched), and free its name; ``expires_at``: gone from then on (``on_complete: delete``).
        Guarded by the version read, so a concurrent change wins. False if it lost."""
        values: dict[str, Any] = {
            ":completed": {"S": JobStatus.COMPLETED.value},
            ":active": {"S": JobStatus.ACTIVE.value},
            ":version": {"N": str(job.version)},
        }
        names = {"#status": "status"}
        expression = "SET #status = :completed REMOVE next_trigger_at"
        if expires_at is not None:
            expression = "SET #status = :completed, #ttl = :expires REMOVE next_trigger_at"
            names["#ttl"] = TTL_ATTRIBUTE
            values[":expires"] = {"N": str(int(expires_at.timestamp()))}
        items: list[TransactWriteItemTypeDef] = [
            {
                "Update": {
                    "TableName": self.table,
                    "Key": job_key(job.job_id),
                    "UpdateExpression": expression,
                    "ConditionExpression": "#status = :active AND version = :version",
                    "ExpressionAttributeNames": names,
                    "ExpressionAttributeValues": values,
                }
            }
        ]
        if job.name:
            items.append(release_name(self.table, job))
        refused = self.transact(items)
        if refused is None:
            return True
        stored = self.get_job(job.job_id)
        return stored is not None and stored.status is JobStatus.COMPLETED and stored.version == job.version

    def expire_job(self, job_id: str, expires_at: datetime) -> None:
        """``on_complete: delete`` of a one-off job whose run ended for good: gone from ``expires_at``
        on (the item's TTL). An item already gone stays gone."""
        self.conditional(
            self.client.update_item,
            Key=job_key(job_id),
            UpdateExpression="SET #ttl = :expires",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeNames={"#ttl": TTL_ATTRIBUTE},
            ExpressionAttributeValues={":expires": {"N": str(int(expires_at.timestamp()))}},
        )

    def name_holder(self, owner: str, name: str) -> tuple[str, datetime | None] | None:
        """The id of the job holding ``name`` among the owner's jobs, and when it was reserved."""
        response = self.client.get_item(TableName=self.table, Key=name_key(owner, name), ConsistentRead=True)
        item = response.get("Item")
        if not item:
            return None
        reserved = item.get("reserved_at")
        return item["job_id"]["S"], from_ms(int(reserved["N"])) if reserved else None

    def get_job(self, job_id: str, *, consistent: bool = True) -> Job | None:
        response = self.client.get_item(TableName=self.table, Key=job_key(job_id), ConsistentRead=consistent)
        item = response.get("Item")
        return job_from_item(item) if item else None

    def list_jobs(
        self,
        owner: str,
        *,
        limit: int,
        cursor: str | None,
        statuses: frozenset[JobStatus] | None,
        name: str | None,
        keep: Callable[[Job], bool] | None = None,
        name_prefix: str | None = None,
    ) -> tuple[list[Job], str | None]:
        """The owner's jobs, newest first, from the owner index (eventually consistent on AWS).

        ``statuses`` are the stored statuses to read; ``keep`` may drop jobs after reading (the API
        derives a one-off job's end from its run)."""
        names = {"#gpk": GSI1_PK}
        values: dict[str, Any] = {":owner": {"S": owner_index_pk(owner)}}
        request: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": GSI1,
            "KeyConditionExpression": "#gpk = :owner",
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": False,
        }
        filters = []
        if statuses is not None:
            choices = sorted(status.value for status in statuses)
            filters.append(f"#status IN ({', '.join(f':status{i}' for i in range(len(choices)))})")
            names["#status"] = "status"
            values.update({f":status{i}": {"S": choice} for i, choice in enumerate(choices)})
        if name is not None:
            filters.append("#name = :name")
            names["#name"] = "name"
            values[":name"] = {"S": name}
        if name_prefix:
            filters.append("begins_with(#name, :prefix)")
            names["#name"] = "name"
            values[":prefix"] = {"S": name_prefix}
        if filters:
            request["FilterExpression"] = " AND ".join(filters)
        return read_page(
            self.client.query, request, limit, cursor, job_from_item, in_job_listing(owner), keep
        )

    def owner_jobs(self, owner: str) -> list[Job]:
        """All of an owner's jobs (for the stats), from the owner index."""
        jobs: list[Job] = []
        request: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": GSI1,
            "KeyConditionExpression": "#gpk = :owner",
            "ExpressionAttributeNames": {"#gpk": GSI1_PK},
            "ExpressionAttributeValues": {":owner": {"S": owner_index_pk(owner)}},
        }
        while True:
            response = self.client.query(**request)
            jobs.extend(job_from_item(item) for item in response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last:
                return jobs
            request["ExclusiveStartKey"] = last
