"""A tick fanned out over several sweeps: each sweeps its group of shards, together they sweep all."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from punctual_functions.core import aws
from punctual_functions.core.factories import build_dispatcher
from punctual_functions.core.model import iso, shard_of
from punctual_functions.core.sweep import shard_groups
from punctual_functions.dispatcher import handler as dispatcher_handler
from tests.integration.conftest import Harness


@pytest.mark.parametrize(
    ("shards", "sweeps", "expected"),
    [
        (8, 1, [[0, 1, 2, 3, 4, 5, 6, 7]]),
        (8, 3, [[0, 1, 2], [3, 4, 5], [6, 7]]),
        (4, 4, [[0], [1], [2], [3]]),
        (3, 70, [[0], [1], [2]]),
    ],
)
def test_shards_are_split_into_contiguous_groups_of_nearly_equal_size(
    shards: int, sweeps: int, expected: list[list[int]]
) -> None:
    assert shard_groups(shards, sweeps) == expected


def jobs_due_in_every_shard(harness: Harness, per_shard: int = 2) -> dict[int, list[str]]:
    """One-off jobs due beyond the look-ahead, until every shard holds ``per_shard`` of them."""
    by_shard: dict[int, list[str]] = {shard: [] for shard in range(harness.settings.shard_count)}
    due = harness.clock() + timedelta(seconds=harness.settings.lookahead_seconds + 120)
    while any(len(ids) < per_shard for ids in by_shard.values()):
        job = harness.create(
            schedule={"at": iso(due)}, target={"type": "http", "url": "http://127.0.0.1:9/hook"}
        )
        by_shard[shard_of(job["job_id"], harness.settings.shard_count)].append(job["job_id"])
    harness.clock.advance(180)
    return by_shard


def sent_jobs(harness: Harness) -> list[str]:
    return [message.job_id for message, _delay in harness.queue.sent]


def test_a_sweep_over_some_shards_dispatches_only_their_triggers(harness: Harness) -> None:
    by_shard = jobs_due_in_every_shard(harness)
    report = harness.dispatcher.sweep(shards=[0, 2])
    assert sorted(sent_jobs(harness)) == sorted(by_shard[0] + by_shard[2])
    assert report.dispatch.dispatched == len(by_shard[0] + by_shard[2])
    harness.dispatcher.sweep(shards=[1, 3])
    assert sorted(sent_jobs(harness)) == sorted(job for ids in by_shard.values() for job in ids)


class FakeContext:
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:punctual-dev-dispatcher"
    function_name = "punctual-dev-dispatcher"
    memory_limit_in_mb = 1024
    aws_request_id = "tick"


class RecordingLambda:
    """Lambda's Invoke, recorded; the groups in ``refuse`` are refused like a throttled call."""

    def __init__(self, refuse: list[list[int]]) -> None:
        self.refuse = refuse
        self.invoked: list[tuple[str, str, list[int]]] = []

    def invoke(self, FunctionName: str, InvocationType: str, Payload: bytes) -> dict[str, Any]:
        group = json.loads(Payload)["shards"]
        if group in self.refuse:
            raise RuntimeError("TooManyRequestsException")
        self.invoked.append((FunctionName, InvocationType, group))
        return {"StatusCode": 202}


@pytest.fixture
def fanned_out(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> Harness:
    settings = harness.settings.replace(sweep_invocations=3)
    dispatcher = build_dispatcher(settings, store=harness.store, queue=harness.queue, clock=harness.clock)
    monkeypatch.setattr(dispatcher_handler, "get_settings", lambda: settings)
    monkeypatch.setattr(dispatcher_handler, "default_dispatcher", lambda: dispatcher)
    return harness


def test_on_aws_a_tick_invokes_one_sweep_per_group_and_sweeps_a_refused_group_itself(
    fanned_out: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = fanned_out
    by_shard = jobs_due_in_every_shard(harness)
    groups = shard_groups(harness.settings.shard_count, 3)
    fake = RecordingLambda(refuse=[groups[1]])
    real_client = aws.client
    monkeypatch.setattr(
        aws,
        "client",
        lambda service, settings: fake if service == "lambda" else real_client(service, settings),
    )
    # As on AWS: no emulator endpoint
    settings = harness.settings.replace(sweep_invocations=3, aws_endpoint_url=None)
    monkeypatch.setattr(dispatcher_handler, "get_settings", lambda: settings)

    summary = dispatcher_handler.handler({"source": "aws.events"}, FakeContext())  # type: ignore[arg-type]

    assert [(name, kind) for name, kind, _group in fake.invoked] == [
        (FakeContext.invoked_function_arn, "Event")
    ] * 2
    assert [group for _name, _kind, group in fake.invoked] == [groups[0], groups[2]]
    # the refused group was swept by the tick itself: nothing waits for the next tick
    refused_jobs = [job for shard in groups[1] for job in by_shard[shard]]
    assert sorted(sent_jobs(harness)) == sorted(refused_jobs)
    assert summary["dispatched"] == len(refused_jobs)
    # each invocation then sweeps its group
    for _name, _kind, group in fake.invoked:
        dispatcher_handler.handler({"shards": group}, FakeContext())  # type: ignore[arg-type]
    assert sorted(sent_jobs(harness)) == sorted(job for ids in by_shard.values() for job in ids)


def test_locally_a_fanned_out_tick_sweeps_every_group_on_threads(fanned_out: Harness) -> None:
    harness = fanned_out
    by_shard = jobs_due_in_every_shard(harness, per_shard=3)
    summary = dispatcher_handler.handler({"source": "aws.events"}, FakeContext())  # type: ignore[arg-type]
    everything = sorted(job for ids in by_shard.values() for job in ids)
    assert sorted(sent_jobs(harness)) == everything
    assert summary["dispatched"] == len(everything) and summary["shards"] == harness.settings.shard_count


def test_concurrent_dispatches_of_a_large_page_send_each_trigger_exactly_once(harness: Harness) -> None:
    settings = harness.settings.replace(dispatch_concurrency=16)
    dispatcher = build_dispatcher(settings, store=harness.store, queue=harness.queue, clock=harness.clock)
    by_shard = jobs_due_in_every_shard(harness, per_shard=10)
    report = dispatcher.sweep()
    sent = sent_jobs(harness)
    assert len(sent) == len(set(sent)) == sum(len(ids) for ids in by_shard.values())
    assert report.dispatch.dispatched == len(sent) and report.dispatch.lost_races == 0
