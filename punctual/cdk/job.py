"""``Job``: a Punctual job declared in a CDK app, beside the code it calls. CloudFormation creates,
updates and deletes it through the service's API (a custom resource, ``job_provider.py``): an update
is one PATCH (the job keeps its id and its history), a delete cancels it, and the API's refusal of a
bad job (its field and reason) is the stack event's reason.

``Schedule`` and ``Target`` build the job's ``schedule`` and ``target`` objects as docs/api.md
describes them; a target that is a resource of the app (a function, a queue, a topic, a bus) is
allowed on the Scheduler by the Job itself (``Scheduler.allow_target``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aws_cdk import CustomResource, Stack
from constructs import Construct

from punctual.cdk.job_provider import RESOURCE_TYPE
from punctual.cdk.scheduler import Scheduler
from punctual_functions.api.requests import CreateJobIn
from punctual_functions.cfn.job_resource import JOB_PROPERTY


@dataclass(frozen=True)
class Schedule:
    """When a job runs: ``Schedule.cron(...)``, ``Schedule.rate(...)`` or ``Schedule.at(...)``."""

    body: Mapping[str, Any]

    @classmethod
    def cron(cls, expression: str, *, timezone: str | None = None, **options: Any) -> Schedule:
        """A cron expression (5 fields, or 6 with seconds first) in ``timezone`` (IANA, default UTC).
        ``options``: the schedule's other fields (start_at, end_at, misfire, catchup_seconds, overlap,
        calendar, on_excluded)."""
        return cls._of(cron=expression, timezone=timezone, **options)

    @classmethod
    def rate(cls, every: str, **options: Any) -> Schedule:
        """Every ``every`` ("5 minutes", "1 hour"), from ``start_at`` if given."""
        return cls._of(rate=every, **options)

    @classmethod
    def at(cls, when: str, *, timezone: str | None = None, **options: Any) -> Schedule:
        """Once, at ``when`` (ISO 8601; naive: in ``timezone``)."""
        return cls._of(at=when, timezone=timezone, **options)

    @classmethod
    def _of(cls, **fields: Any) -> Schedule:
        return cls({name: value for name, value in fields.items() if value is not None})


@dataclass(frozen=True)
class Target:
    """Where each run is delivered. ``resource``: the app's construct it names, if any, which the
    Job allows on its Scheduler."""

    body: Mapping[str, Any]
    resource: Any = field(default=None, compare=False)

    @classmethod
    def function(cls, function: Any) -> Target:
        """Invoke a Lambda function (synchronously): its event is the run (job_id, run_id, attempt,
        scheduled_for, idempotency_key) and the job's ``payload`` (docs/api.md, "Targets")."""
        return cls({"type": "lambda", "function": function.function_arn}, function)

    @classmethod
    def queue(cls, queue: Any) -> Target:
        """Send the job's ``payload`` to an SQS queue (the run's fields as message attributes)."""
        return cls({"type": "sqs", "queue_url": queue.queue_url}, queue)

    @classmethod
    def topic(cls, topic: Any) -> Target:
        """Publish the job's ``payload`` to an SNS topic (the run's fields as message attributes)."""
        return cls({"type": "sns", "topic_arn": topic.topic_arn}, topic)

    @classmethod
    def bus(cls, bus: Any, *, source: str | None = None, detail_type: str | None = None) -> Target:
        """Put an event on an EventBridge bus: its detail is the job's ``payload`` and the run's
        ``punctual`` fields (docs/api.md, "Targets")."""
        body = {"type": "eventbridge", "bus": bus.event_bus_arn, "source": source, "detail_type": detail_type}
        return cls({name: value for name, value in body.items() if value is not None}, bus)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        method: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout_seconds: float | None = None,
    ) -> Target:
        """Call a webhook (its host must be on the Scheduler's ``http_allow_list``)."""
        body = {
            "type": "http",
            "url": url,
            "method": method,
            "headers": headers,
            "timeout_seconds": timeout_seconds,
        }
        return cls({name: value for name, value in body.items() if value is not None})


class Job(Construct):
    """A job of ``scheduler``, as ``POST /v1/jobs`` takes it: ``schedule``, ``target``, and any of
    the job's other fields by their API names (docs/api.md): name, payload, retry, timeout_seconds,
    tags, jitter_seconds, pause_on_failures, max_runs, max_concurrent, alerts, on_complete,
    delete_after_days, signing_secret (it is written into the template: prefer none). ``dead_letter``
    takes a queue of the app.

    Attributes, known once deployed: ``job_id``, ``next_run_at``, ``status`` (as of the last create
    or update), ``name``."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        scheduler: Scheduler,
        schedule: Schedule,
        target: Target,
        dead_letter: Any = None,
        **fields: Any,
    ) -> None:
        super().__init__(scope, construct_id)
        unknown = sorted(set(fields) - set(CreateJobIn.model_fields))
        if unknown:  # the API would refuse it at deploy time; say so at synth
            known = ", ".join(sorted(set(CreateJobIn.model_fields) - {"schedule", "target", "dead_letter"}))
            raise TypeError(
                f"Job {construct_id}: no job field {', '.join(unknown)} (a job's fields: {known})"
            )
        body: dict[str, Any] = {"schedule": dict(schedule.body), "target": dict(target.body)}
        body.update({name: value for name, value in fields.items() if value is not None})
        if target.resource is not None:
            scheduler.allow_target(target.resource)
        if dead_letter is not None:
            scheduler.allow_target(dead_letter)
            body["dead_letter"] = {"type": "sqs", "queue_url": dead_letter.queue_url}
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=scheduler.job_provider.service_token,
            resource_type=RESOURCE_TYPE,
            properties={JOB_PROPERTY: Stack.of(self).to_json_string(body)},
        )
        # The service whole (API, table, functions, the allow-list naming the target) comes first,
        # and the job goes first when the stack is deleted: it is cancelled through the API.
        self.resource.node.add_dependency(scheduler)

    @property
    def job_id(self) -> str:
        return self.resource.get_att_string("JobId")

    @property
    def next_run_at(self) -> str:
        return self.resource.get_att_string("NextRunAt")

    @property
    def status(self) -> str:
        return self.resource.get_att_string("Status")

    @property
    def name(self) -> str:
        return self.resource.get_att_string("Name")
