"""Runs: the history of a job, and the conditional steps of an attempt (start, lease, outcome)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from punctual_functions.core.model import (
    Attempt,
    Job,
    Reason,
    Run,
    RunStatus,
    Trigger,
    check_transition,
    lateness_of,
    started_run,
    to_ms,
)
from punctual_functions.core.ports import RunNotOurs
from punctual_functions.core.resources import SK, TTL_ATTRIBUTE
from punctual_functions.core.store.base import TableBase, chunks
from punctual_functions.core.store.items import (
    as_stored_attempt,
    attempt_to_attribute,
    job_from_item,
    optional_ms,
    run_from_item,
    run_to_item,
)
from punctual_functions.core.store.jobs import put_trigger_item
from punctual_functions.core.store.keys import in_run_listing, job_key, run_key
from punctual_functions.core.store.pages import read_page

# A batch read's requests in all for keys the table leaves unprocessed (throttled), before it reads
# what is still left one item at a time.
UNPROCESSED_ROUNDS = 2


class RunTable(TableBase):
    def get_run(self, job_id: str, run_id: str) -> Run | None:
        response = self.client.get_item(
            TableName=self.table, Key=run_key(job_id, run_id), ConsistentRead=True
        )
        item = response.get("Item")
        return run_from_item(item) if item else None

    def get_run_and_job(self, job_id: str, run_id: str) -> tuple[Run | None, Job | None]:
        """Both in one round trip: the worker's first read of a lone record."""
        runs, jobs = self.get_runs_and_jobs([(job_id, run_id)])
        return runs.get((job_id, run_id)), jobs.get(job_id)

    def get_runs_and_jobs(
        self, keys: list[tuple[str, str]]
    ) -> tuple[dict[tuple[str, str], Run], dict[str, Job]]:
        """A batch's runs and jobs, consistent, a hundred items to a request. Keys the table left
        unprocessed (throttled) are asked again, then read one by one rather than reported missing."""
        pairs = list(dict.fromkeys(keys))
        wanted = [run_key(job_id, run_id) for job_id, run_id in pairs]
        wanted += [job_key(job_id) for job_id in dict.fromkeys(job_id for job_id, _ in pairs)]
        items = self.read_consistently(wanted)
        runs: dict[tuple[str, str], Run] = {}
        jobs: dict[str, Job] = {}
        for item in items:
            if item[SK]["S"].startswith("RUN#"):
                run = run_from_item(item)
                runs[(run.job_id, run.run_id)] = run
            else:
                job = job_from_item(item)
                jobs[job.job_id] = job
        return runs, jobs

    def read_consistently(self, wanted: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The items of ``wanted`` keys that exist, consistent, a hundred to a request. Keys the table
        left unprocessed (throttled) are asked again, then read one by one rather than reported missing."""
        items: list[dict[str, Any]] = []
        for chunk in chunks(wanted, 100):
            pending: list[Any] = chunk
            for _ in range(UNPROCESSED_ROUNDS):
                response = self.client.batch_get_item(
                    RequestItems={self.table: {"Keys": pending, "ConsistentRead": True}}
                )
                items += response.get("Responses", {}).get(self.table, [])
                unprocessed: dict[str, Any] = response.get("UnprocessedKeys") or {}
                pending = unprocessed.get(self.table, {}).get("Keys", [])
                if not pending:
                    break
            for key in pending:
                item = self.client.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item")
                if item is not None:
                    items.append(item)
        return items

    def get_runs(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], Run]:
        """The runs of these (job_id, run_id) pairs that exist, eventually consistent (the sweep's
        "was this occurrence dispatched": a stale answer costs a duplicate message, never a run)."""
        found: dict[tuple[str, str], Run] = {}
        for chunk in chunks(list(dict.fromkeys(keys)), 100):
            request: dict[str, Any] = {
                self.table: {"Keys": [run_key(job_id, run_id) for job_id, run_id in chunk]}
            }
            while request:
                response = self.client.batch_get_item(RequestItems=request)
                for item in response.get("Responses", {}).get(self.table, []):
                    run = run_from_item(item)
                    found[(run.job_id, run.run_id)] = run
                request = response.get("UnprocessedKeys") or {}
        return found

    def put_run(self, run: Run) -> bool:
        """Write a dispatched occurrence's run (QUEUED, or SKIPPED by the misfire policy); False when
        it exists already. An occurrence runs once: only a never-started run of an older job version
        (queued before a pause or a schedule change) is replaced."""
        return self.conditional(
            self.client.put_item,
            Item=run_to_item(run, self.expiry(run.scheduled_for)),
            ConditionExpression=(
                "attribute_not_exists(pk) OR (job_version < :version AND #run_status IN (:queued, :skipped))"
            ),
            ExpressionAttributeNames={"#run_status": "status"},
            ExpressionAttributeValues={
                ":queued": {"S": RunStatus.QUEUED.value},
                ":skipped": {"S": RunStatus.SKIPPED.value},
                ":version": {"N": str(run.job_version)},
            },
        )

    def list_runs(
        self,
        job_id: str,
        *,
        limit: int,
        cursor: str | None = None,
        status: RunStatus | None = None,
        reason: Reason | None = None,
    ) -> tuple[list[Run], str | None]:
        """A job's history, newest first (run ids sort by scheduled time)."""
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": {"S": f"JOB#{job_id}"}, ":prefix": {"S": "RUN#"}},
            "ScanIndexForward": False,
        }
        filters, names = [], {}
        if status is not None:
            filters.append("#status = :status")
            names["#status"] = "status"
            request["ExpressionAttributeValues"][":status"] = {"S": status.value}
        if reason is not None:
            filters.append("#reason = :reason")
            names["#reason"] = "reason"
            request["ExpressionAttributeValues"][":reason"] = {"S": reason.value}
        if names:
            request["ExpressionAttributeNames"] = names
        if filters:
            request["FilterExpression"] = " AND ".join(filters)
        return read_page(self.client.query, request, limit, cursor, run_from_item, in_run_listing(job_id))

    def recent_runs(self, job_id: str, *, limit: int) -> list[Run]:
        """A job's newest ``limit`` runs, newest first (eventually consistent): what its view derives
        ``last_run`` and ``run_counts`` from."""
        runs: list[Run] = []
        request: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": {":pk": {"S": f"JOB#{job_id}"}, ":prefix": {"S": "RUN#"}},
            "ScanIndexForward": False,
        }
        while len(runs) < limit:
            request["Limit"] = limit - len(runs)
            response = self.client.query(**request)
            runs.extend(run_from_item(item) for item in response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last:
                break
            request["ExclusiveStartKey"] = last
        return runs

    def runs_before(self, job_id: str, run_id: str, *, limit: int) -> list[Run]:
        """The runs scheduled just before ``run_id``, newest first (for the overlap policy)."""
        response = self.client.query(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :low AND :high",
            ExpressionAttributeValues={
                ":pk": {"S": f"JOB#{job_id}"},
                ":low": {"S": "RUN#"},
                ":high": {"S": f"RUN#{run_id}"},
            },
            ScanIndexForward=False,
            Limit=limit + 1,
            ConsistentRead=True,
        )
        runs = [run_from_item(item) for item in response.get("Items", [])]
        return [run for run in runs if run.run_id != run_id][:limit]

    def runs_after(self, job_id: str, run_id: str, *, limit: int) -> list[Run]:
        """The runs scheduled just after ``run_id``, oldest first (the one waiting behind it)."""
        response = self.client.query(
            TableName=self.table,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :low AND :high",
            ExpressionAttributeValues={
                ":pk": {"S": f"JOB#{job_id}"},
                ":low": {"S": f"RUN#{run_id}"},
                ":high": {"S": "RUN#~"},  # past every run id (they start with a digit)
            },
            Limit=limit + 1,
            ConsistentRead=True,
        )
        runs = [run_from_item(item) for item in response.get("Items", [])]
        return [run for run in runs if run.run_id != run_id][:limit]

    def claim_alert(self, run: Run, kind: str) -> bool:
        """Add ``kind`` to the run's ``alerts_sent``, unless it is there: one alert per run and kind."""
        return self.conditional(
            self.client.update_item,
            Key=run_key(run.job_id, run.run_id),
            UpdateExpression="ADD alerts_sent :kinds",
            ConditionExpression="attribute_exists(pk) AND NOT contains(alerts_sent, :kind)",
            ExpressionAttributeValues={":kinds": {"SS": [kind]}, ":kind": {"S": kind}},
        )

    def mark_waiting(self, run: Run, behind: str) -> bool:
        """A ``QUEUED`` run waits behind ``behind`` (a buffering overlap policy): one write, once."""
        return self.conditional(
            self.client.update_item,
            Key=run_key(run.job_id, run.run_id),
            UpdateExpression="SET overlap_with = :behind",
            ConditionExpression="#status = :queued AND job_version = :seen_version",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={
                ":behind": {"S": behind},
                ":queued": {"S": RunStatus.QUEUED.value},
                ":seen_version": {"N": str(run.job_version)},
            },
        )

    def start_attempt(
        self, run: Run, *, token: str, now: datetime, lease_until: datetime, create: bool = False
    ) -> Run:
        """Start the next attempt, or take over one whose worker died: exactly one caller wins.

        The condition pins the status, attempt count and lease we read, so a duplicate delivery or a
        second worker finds it false and does nothing.
        """
        check_transition(run.status, RunStatus.RUNNING)
        started = started_run(run, token=token, now=now, lease_until=lease_until)
        values: dict[str, Any] = {
            ":running": {"S": RunStatus.RUNNING.value},
            ":seen_status": {"S": run.status.value},
            ":seen_attempt": {"N": str(run.attempt)},
            ":attempt": {"N": str(started.attempt)},
            ":token": {"S": token},
            ":lease": {"N": str(to_ms(lease_until))},
            ":started": {"N": str(to_ms(started.started_at or now))},
            ":lateness": {"N": str(started.lateness_ms)},
            ":one": {"N": "1"},
        }
        condition = "#status = :seen_status AND attempt = :seen_attempt"
        names = {"#status": "status"}
        sets = [
            "#status = :running, attempt = :attempt, lease_token = :token, lease_until = :lease,"
            " started_at = :started, lateness_ms = :lateness"
        ]
        removes = ""
        if run.reason is Reason.LIMITED:  # it waited on a limit: no longer, and for how long in all
            removes = " REMOVE #reason"
            names["#reason"] = "reason"
            if started.limited_ms is not None:
                sets.append("limited_ms = :limited_ms")
                values[":limited_ms"] = {"N": str(started.limited_ms)}
        if run.status is RunStatus.RUNNING:  # a takeover: pin the lease that lapsed
            condition += " AND lease_until = :seen_lease"
            values[":seen_lease"] = {"N": str(optional_ms(run.lease_until))}
        if create and run.status is RunStatus.QUEUED:
            # The message overtook the dispatcher's write of the QUEUED run: the start creates it.
            condition = f"attribute_not_exists(pk) OR ({condition})"
            sets.append(_unless_written(run, self.expiry(run.scheduled_for), names, values))
        if not self.conditional(
            self.client.update_item,
            Key=run_key(run.job_id, run.run_id),
            UpdateExpression="SET " + ", ".join(sets) + " ADD executions :one" + removes,
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        ):
            raise RunNotOurs(f"run {run.run_id} was started by someone else")
        return started

    def renew_lease(self, run: Run, lease_until: datetime) -> bool:
        return self.conditional(
            self.client.update_item,
            Key=run_key(run.job_id, run.run_id),
            UpdateExpression="SET lease_until = :lease",
            ConditionExpression="lease_token = :token AND #status = :running",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={
                ":lease": {"N": str(to_ms(lease_until))},
                ":token": {"S": run.lease_token or ""},
                ":running": {"S": RunStatus.RUNNING.value},
            },
        )

    def finish_attempt(
        self,
        run: Run,
        attempt: Attempt,
        *,
        status: RunStatus,
        now: datetime,
        next_attempt_at: datetime | None = None,
        retry_trigger: Trigger | None = None,
        started_late: datetime | None = None,
    ) -> None:
        """Record an attempt's outcome on the run alone, guarded by our lease token (the job's view
        derives its last run and counts from the runs: one write, not a transaction with the job).

        ``retry_trigger`` (a backoff beyond the queue's reach) is written in the same transaction.
        """
        check_transition(RunStatus.RUNNING, status)
        terminal = status.is_terminal
        values: dict[str, Any] = {
            ":status": {"S": status.value},
            ":token": {"S": run.lease_token or ""},
            ":running": {"S": RunStatus.RUNNING.value},
            ":attempt": {"L": [attempt_to_attribute(attempt)]},
            ":empty": {"L": []},
        }
        sets = ["#status = :status", "attempts = list_append(if_not_exists(attempts, :empty), :attempt)"]
        removes = ["lease_until", "lease_token"]
        if attempt.error:
            sets.append("#error = :error")
            values[":error"] = {"S": attempt.error}
        else:
            removes.append("#error")
        if terminal:
            sets.append("finished_at = :finished")
            values[":finished"] = {"N": str(to_ms(now))}
            sets.append(f"{TTL_ATTRIBUTE} = :expires")
            values[":expires"] = {"N": str(int(self.expiry(now).timestamp()))}
        if next_attempt_at is not None:
            sets.append("next_attempt_at = :next")
            values[":next"] = {"N": str(to_ms(next_attempt_at))}
        if started_late is not None:
            sets.append("started_at = :started, lateness_ms = :lateness")
            values[":started"] = {"N": str(to_ms(started_late))}
            values[":lateness"] = {"N": str(lateness_of(run, started_late))}
        expression = "SET " + ", ".join(sets) + " REMOVE " + ", ".join(removes)
        update: dict[str, Any] = {
            "Key": run_key(run.job_id, run.run_id),
            "UpdateExpression": expression,
            "ConditionExpression": "lease_token = :token AND #status = :running",
            "ExpressionAttributeNames": {"#status": "status", "#error": "error"},
            "ExpressionAttributeValues": values,
        }
        if retry_trigger is None:
            written = self.conditional(self.client.update_item, **update)
            refusal: Exception | None = None
        else:
            with_table: Any = {"TableName": self.table, **update}
            refused = self.transact([{"Update": with_table}, put_trigger_item(self.table, retry_trigger)])
            written = refused is None
            refusal = refused.error if refused is not None else None
        if written:
            return
        if self.landed(
            lambda: self.get_run(run.job_id, run.run_id),
            lambda stored: stored.status is status and stored.attempts[-1:] == (as_stored_attempt(attempt),),
        ):
            return  # our own write, whose answer was lost and retried
        raise RunNotOurs(f"run {run.run_id} is no longer ours to finish") from refusal

    def mark_run(
        self,
        run: Run,
        status: RunStatus,
        *,
        now: datetime,
        error: str | None,
        create: bool = False,
        reason: Reason | None = None,
        overlap_with: str | None = None,
    ) -> bool:
        """Finish a run that never started an attempt (cancelled, skipped), or cancel one under way:
        guarded by its status."""
        check_transition(run.status, status)
        values: dict[str, Any] = {
            ":status": {"S": status.value},
            ":seen": {"S": run.status.value},
            ":seen_version": {"N": str(run.job_version)},
            ":now": {"N": str(to_ms(now))},
            ":expires": {"N": str(int(self.expiry(now).timestamp()))},
        }
        sets = ["#status = :status", "finished_at = :now", f"{TTL_ATTRIBUTE} = :expires"]
        names = {"#status": "status"}
        if error:
            sets.append("#error = :error")
            names["#error"] = "error"
            values[":error"] = {"S": error}
        if reason is not None:
            sets.append("#reason = :reason")
            names["#reason"] = "reason"
            values[":reason"] = {"S": reason.value}
        if overlap_with is not None:
            sets.append("overlap_with = :overlap_with")
            values[":overlap_with"] = {"S": overlap_with}
        # The version pins the run we read: a resume may have replaced it with a newer one.
        condition = "#status = :seen AND job_version = :seen_version"
        if create and run.status is RunStatus.QUEUED:
            # A message that overtook the dispatcher's write of the QUEUED run ends it all the same.
            condition = f"attribute_not_exists(pk) OR ({condition})"
            sets.append(
                _unless_written(
                    run, self.expiry(now), names, values, skip=("status", "error", "reason", TTL_ATTRIBUTE)
                )
            )
        return self.conditional(
            self.client.update_item,
            Key=run_key(run.job_id, run.run_id),
            UpdateExpression="SET " + ", ".join(sets),
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )


# What a run item holds besides what a start or an end writes (pk and sk come from the key).
_BASE_ATTRIBUTES = (
    "type",
    "job_id",
    "run_id",
    "owner",
    "scheduled_for",
    "kind",
    "job_version",
    "queued_at",
    "next_attempt_at",
    "attempts",
)


def _unless_written(
    run: Run,
    expires_at: datetime,
    names: dict[str, str],
    values: dict[str, Any],
    skip: tuple[str, ...] = (),
) -> str:
    """``SET`` clauses that write the run's own attributes only where the item lacks them: an
    update that may create the run item (the message arrived before the dispatcher wrote it)."""
    item = run_to_item(run, expires_at)
    clauses = []
    for index, attribute in enumerate(a for a in (*_BASE_ATTRIBUTES, TTL_ATTRIBUTE) if a not in skip):
        if attribute not in item:
            continue
        names[f"#b{index}"] = attribute
        values[f":b{index}"] = item[attribute]
        clauses.append(f"#b{index} = if_not_exists(#b{index}, :b{index})")
    return ", ".join(clauses)
