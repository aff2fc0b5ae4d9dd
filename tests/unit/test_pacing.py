"""Arrival: a message becomes visible ``head_start`` before its second, never after it."""

from __future__ import annotations

import collections
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from punctual.testing.fakes.store import MemoryStore
from punctual_functions.core import pacing, sending
from punctual_functions.core.dispatching import Dispatcher
from punctual_functions.core.factories import build_dispatcher
from punctual_functions.core.queue import WorkMessage
from punctual_functions.core.settings import Settings
from tests.conftest import Clock
from tests.fakes.queue import MemoryQueue

T0 = datetime(2026, 11, 25, 12, 0, 0, tzinfo=UTC)
HEAD = timedelta(milliseconds=250)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_the_delay_rounds_down_so_the_message_is_never_late() -> None:
    assert pacing.delay_for(at(90.9), T0, HEAD) == 90  # visible at 90.0: 0.9 s early, not 0.1 s late
    assert pacing.delay_for(at(90.25), T0, HEAD) == 90  # exactly the head start
    assert pacing.delay_for(at(0.1), T0, HEAD) == 0  # its moment has passed: at once
    assert pacing.delay_for(at(5000), T0, HEAD) == 900  # the queue's longest delay


def test_the_send_moment_makes_the_whole_second_delay_land_on_the_head_start() -> None:
    moment = pacing.send_moment(at(90.9), T0, HEAD)
    assert moment == at(0.65)
    assert moment + timedelta(seconds=pacing.delay_for(at(90.9), moment, HEAD)) == at(90.9) - HEAD
    assert pacing.send_moment(at(0.1), T0, HEAD) == T0, "passed: now"
    assert pacing.send_moment(at(5000), T0, HEAD) == T0, "beyond 900 s: now (the worker gives it back)"


@given(
    fire=st.floats(min_value=-5, max_value=899, allow_nan=False),
    head_ms=st.integers(min_value=0, max_value=5000),
    late_ms=st.integers(min_value=0, max_value=3000),
)
def test_sent_at_its_moment_or_later_a_message_is_visible_at_its_head_start_or_earlier(
    fire: float, head_ms: int, late_ms: int
) -> None:
    head = timedelta(milliseconds=head_ms)
    fire_at = at(round(fire, 3))
    moment = pacing.send_moment(fire_at, T0, head)
    assert T0 <= moment < T0 + timedelta(seconds=1)
    sent = moment + timedelta(milliseconds=late_ms)  # a slow request before it
    visible = sent + timedelta(seconds=pacing.delay_for(fire_at, sent, head))
    wanted = max(fire_at - head, sent)
    assert visible <= wanted, "never later than its head start (or at once if that has passed)"
    assert wanted - visible < timedelta(seconds=1), "less than a second early"
    if late_ms == 0 and fire_at - head > T0:
        assert visible == fire_at - head, "on time, exactly"


def test_a_plan_groups_moments_within_the_window_in_their_order() -> None:
    fires = [at(60.5), at(60.0), at(61.0), at(60.03), at(60.9)]
    groups = pacing.plan(list("abcde"), fires, T0, HEAD)
    # moments: a 0.25, b 0.75, c 0.75, d 0.78, e 0.65
    lead = pacing.SEND_LEAD
    assert [(g.at, g.items) for g in groups] == [
        (at(0.25) - lead, ["a"]),
        (at(0.65) - lead, ["e"]),
        (at(0.75) - lead, ["b", "c", "d"]),
    ]
    assert pacing.plan(["x"], [at(0.26)], T0, HEAD)[0].at == T0, "never before now"
    # Its moment too close to now for a group to start early enough for it: a second later.
    assert pacing.plan(["x"], [at(60.26)], T0, HEAD)[0].at == at(1.01) - lead


def _dispatcher(clock: Clock, queue: MemoryQueue, sends_take: float = 0.0) -> Dispatcher:
    settings = Settings(table_name="memory", queue_url="memory://work", dlq_url="memory://dlq", shard_count=1)
    store = MemoryStore()
    original = queue.send

    def slow_send(messages: list[tuple[WorkMessage, int]]) -> None:
        original(messages)
        queue.sent_at.append((clock(), [delay for _m, delay in messages]))  # type: ignore[attr-defined]
        for message, delay in messages:
            assert message.queued is not None
            queue.visible_at[message.queued.scheduled_for].append(clock() + timedelta(seconds=delay))  # type: ignore[attr-defined]
        clock.advance(sends_take)

    queue.sent_at = []  # type: ignore[attr-defined]
    queue.visible_at = collections.defaultdict(list)  # type: ignore[attr-defined]
    queue.send = slow_send  # type: ignore[method-assign]
    return build_dispatcher(settings, store=store, queue=queue, clock=clock)


def _create_due(dispatcher: Dispatcher, clock: Clock, fires: list[datetime]) -> None:
    from punctual_functions.api.requests import CreateJobIn
    from punctual_functions.core.factories import build_job_service
    from punctual_functions.core.ssrf_guard import NetworkPolicy

    service = build_job_service(
        dispatcher.settings,
        store=dispatcher.store,
        dispatcher=dispatcher,
        policy=NetworkPolicy(allow_loopback=False, allow_list=("example.com",)),
        clock=clock,
    )
    for fire in fires:
        service.create_job(
            "alice",
            CreateJobIn.model_validate(
                {
                    "schedule": {"at": fire.isoformat()},
                    "target": {"type": "http", "url": "https://example.com/"},
                }
            ),
        )


def test_a_sweep_sends_each_message_to_arrive_its_head_start_before_its_second() -> None:
    clock = Clock(T0)
    queue = MemoryQueue(delays=False)
    dispatcher = _dispatcher(clock, queue)
    fires = [at(200.0)] * 12 + [at(200.4), at(210.123)]
    _create_due(dispatcher, clock, fires)
    clock.advance(100)  # 100 s before the first: within the look-ahead
    assert dispatcher.sweep().dispatch.sent == 14
    arrivals = sorted(
        when + timedelta(seconds=delay)
        for when, delays in queue.sent_at  # type: ignore[attr-defined]
        for delay in delays
    )
    lead = pacing.SEND_LEAD  # each request is made that long before its moment
    assert arrivals == sorted(fire - dispatcher.settings.head_start - lead for fire in fires)
    # In the order of their moments; the twelve due at one second in two requests (ten and two).
    assert [len(delays) for _when, delays in queue.sent_at] == [1, 10, 2, 1]  # type: ignore[attr-defined]
    assert clock() - at(100) < timedelta(seconds=1), "the sends of a round take less than a second"


def test_a_request_that_comes_late_makes_its_messages_early_not_late() -> None:
    clock = Clock(T0)
    queue = MemoryQueue(delays=False)
    dispatcher = _dispatcher(clock, queue, sends_take=0.3)  # each SendMessageBatch takes 300 ms
    fires = [at(200.0), at(200.1), at(200.2)]  # three moments 100 ms apart: three requests in turn
    _create_due(dispatcher, clock, fires)
    clock.advance(100)
    dispatcher.sweep()
    early = sorted(
        (fire - dispatcher.settings.head_start - (when + timedelta(seconds=delay))).total_seconds()
        for fire, (when, (delay,)) in zip(fires, queue.sent_at, strict=True)  # type: ignore[attr-defined]
    )
    lead = pacing.SEND_LEAD.total_seconds()
    assert early == pytest.approx([lead, 1 - 0.38 - lead + lead, 1 - 0.18 - lead + lead]), (
        "the first on time; the requests after a slow one come after their moments: a second early"
    )


def test_a_large_group_starts_early_enough_that_no_request_of_it_comes_after_its_moment() -> None:
    clock = Clock(T0)
    queue = MemoryQueue(delays=False)
    dispatcher = _dispatcher(clock, queue)
    fires = [at(200.0)] * 95 + [at(207.0)] * 95  # the same send moment: one group of 19 requests
    _create_due(dispatcher, clock, fires)
    clock.advance(100)
    dispatcher.sweep()
    arrivals = [
        (when + timedelta(seconds=delay), delays)
        for when, delays in queue.sent_at  # type: ignore[attr-defined]
        for delay in delays
    ]
    assert len(arrivals) == 190
    wanted = {at(200.0) - dispatcher.settings.head_start, at(207.0) - dispatcher.settings.head_start}
    for arrival, _delays in arrivals:
        gap = min((w - arrival for w in wanted if w >= arrival), default=timedelta(seconds=-1))
        assert timedelta(0) <= gap < timedelta(milliseconds=100), "none late, none a second early"
    # Ten to a request in due-time order: 19 requests, the runs of one second in consecutive ones.
    assert len(queue.sent_at) == 19  # type: ignore[attr-defined]
    # (the requests go eight at a time: in whatever order they were made, each holds a run of delays)
    requests = sorted((delays for _when, delays in queue.sent_at), key=lambda d: (d[0], d[-1]))  # type: ignore[attr-defined]
    flat = [delay for delays in requests for delay in delays]
    assert flat == sorted(flat)
    assert sum(len(set(delays)) > 1 for delays in requests) == 1, "one request holds both seconds' runs"


def test_runs_due_on_different_whole_seconds_share_requests() -> None:
    """The crons of a minute due on whole seconds have one send moment: a request per ten runs,
    not per second (each message has its own delay)."""
    clock = Clock(T0)
    queue = MemoryQueue(delays=False)
    dispatcher = _dispatcher(clock, queue)
    fires = [at(200.0 + n) for n in range(20)]
    _create_due(dispatcher, clock, fires)
    clock.advance(100)
    assert dispatcher.sweep().dispatch.sent == 20
    assert [len(delays) for _when, delays in queue.sent_at] == [10, 10]  # type: ignore[attr-defined]
    arrivals = sorted(
        when + timedelta(seconds=delay)
        for when, delays in queue.sent_at  # type: ignore[attr-defined]
        for delay in delays
    )
    head = dispatcher.settings.head_start
    assert all(
        timedelta(0) <= fire - head - arrival < timedelta(milliseconds=100)
        for fire, arrival in zip(fires, arrivals, strict=True)
    ), "each at its own second's head start"


def test_the_api_sends_at_once_with_the_delay_rounded_down() -> None:
    clock = Clock(T0)
    queue = MemoryQueue(delays=False)
    dispatcher = _dispatcher(clock, queue)
    _create_due(dispatcher, clock, [at(30.9)])
    ((when, (delay,)),) = queue.sent_at  # type: ignore[attr-defined]
    assert when == T0 and delay == 30, "no wait in the request: visible 0.65 s before the head start"
    assert clock.slept == []


def test_a_sleep_that_wakes_a_little_late_still_lands_on_the_head_start_not_a_second_early() -> None:
    """Found on the local stack: sends made exactly at their moment, after a sleep that always wakes
    a fraction of a millisecond late, rounded their delays down a whole second (held 1.24 s)."""
    clock = Clock(T0)
    queue = MemoryQueue(delays=False)
    dispatcher = _dispatcher(clock, queue)

    def oversleep(seconds: float) -> None:
        clock.advance(seconds + 0.003)  # wakes 3 ms late

    clock.sleep = oversleep  # type: ignore[method-assign]
    _create_due(dispatcher, clock, [at(200.0)])
    clock.advance(100)
    dispatcher.sweep()
    ((when, (delay,)),) = queue.sent_at  # type: ignore[attr-defined]
    wanted = at(200.0) - dispatcher.settings.head_start
    assert wanted - timedelta(milliseconds=20) <= when + timedelta(seconds=delay) <= wanted


def test_a_plan_spreads_a_large_round_over_whole_seconds_and_each_message_still_lands_on_its_moment() -> None:
    # 3,000 runs due over the next minutes, at every millisecond fraction, and 300 due within the second.
    fires = [at(30 + index * 0.0537) for index in range(3000)] + [
        at(0.3 + index * 0.002) for index in range(300)
    ]
    groups = pacing.plan(list(range(len(fires))), fires, T0, HEAD, per_second=1000)
    sent_at = {item: group.at for group in groups for item in group.items}
    assert sorted(sent_at) == list(range(len(fires))), "each message once"
    per_second: dict[int, int] = {}
    for item, sent in sent_at.items():
        second = int((sent + pacing.SEND_LEAD - T0).total_seconds())
        per_second[second] = per_second.get(second, 0) + 1
        visible = sent + timedelta(seconds=pacing.delay_for(fires[item], sent, HEAD))
        if fires[item] - HEAD > sent:
            early = fires[item] - HEAD - visible
            assert timedelta(0) <= early <= pacing.GROUP_WINDOW + pacing.SEND_LEAD, (
                "spread, yet on its moment"
            )
    # A group begun near a second's end takes the moments of the next 50 ms with it.
    assert max(per_second.values()) <= 1000 * 1.05
    assert max(per_second) <= pacing.MAX_SPREAD_SECONDS
    assert per_second[0] >= 950, "the runs with no room go first, the second filled with the others"
    assert all(sent_at[item] < at(1) for item in range(3000, 3300))


def test_a_plan_for_a_round_the_sender_keeps_up_with_sends_in_the_next_second() -> None:
    fires = [at(30 + index * 0.5) for index in range(100)]
    groups = pacing.plan(list(range(100)), fires, T0, HEAD, per_second=1000)
    assert all(group.at < at(1) for group in groups)


def test_a_large_round_is_sent_over_several_seconds_so_that_no_message_is_a_second_early(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 5,000 one-offs due within half a minute at arbitrary milliseconds: crowded into one second, a
    # request each 4 ms, the sends would fall behind their moments and most messages would come a
    # second early. One request at a time: the fake clock cannot make requests overlap.
    monkeypatch.setattr(sending, "SEND_THREADS", 1)
    clock = Clock(T0)
    queue = MemoryQueue(delays=False)
    dispatcher = _dispatcher(clock, queue, sends_take=0.004)
    fires = [T0 + timedelta(milliseconds=200_000 + index * 6 + index % 7) for index in range(5000)]
    _create_due(dispatcher, clock, fires)
    clock.advance(160)
    assert dispatcher.sweep().dispatch.sent == 5000
    early = [
        (fire - dispatcher.settings.head_start - visible).total_seconds()
        for fire in set(fires)
        for visible in queue.visible_at[fire]  # type: ignore[attr-defined]
    ]
    assert len(early) == 5000
    assert min(early) >= 0, "none late"
    assert max(early) < 0.25, "none a second early: a group's window, its lead and its head start at most"


def test_sweeps_sending_through_one_sender_share_its_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    # The sweeps of several shards run at once in one dispatcher and send through its one sender: each
    # plans around what the others booked, so that together they keep to the sender's rate.
    clock = Clock(T0)
    sender = sending.Sender(MemoryQueue(delays=False), HEAD, clock=clock)
    monkeypatch.setattr(sender, "per_second", lambda: 600)
    per_second: dict[int, int] = collections.Counter()
    for shard in range(3):
        outgoing = [
            (WorkMessage(f"job-{shard}-{i}", f"run-{i}"), at(30 + i * 0.0277 + shard * 0.003))
            for i in range(1000)
        ]
        for group in sender._plan(outgoing):
            per_second[int((group.at + pacing.SEND_LEAD - T0).total_seconds())] += len(group.items)
    assert sum(per_second.values()) == 3000
    # By the groups' start (a group begun near a second's end takes the next 50 ms's moments along).
    assert max(per_second.values()) <= 600 * 1.1, per_second
    assert len(per_second) >= 5, "3,000 at 600 a second: five seconds at least"
