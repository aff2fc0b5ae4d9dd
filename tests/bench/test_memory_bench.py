"""The memory bench's own arithmetic, on synthetic inputs (no stack, no cgroup): the CFS quota that
emulates a Lambda size, the due seconds halfway between the dispatcher's ticks, the order of the
sizes, a batch's phases, a size's summary and which size is the answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench import memory
from bench.memory import (
    BATCH,
    batch_lateness,
    due_seconds,
    holding_estimate_mb,
    outcome_lines,
    phases,
    quota_us,
    slot_sizes,
    smallest_passing,
    summarize_size,
)

# ------------------------------------------------------------------------------------ the quota


@pytest.mark.parametrize(
    ("memory_mb", "period_us", "quota"),
    [
        (1769, 20_000, 20_000),  # one full vCPU: the whole period
        (128, 20_000, 1_447),  # 20000 x 128 / 1769 = 1447.1
        (256, 20_000, 2_894),
        (512, 20_000, 5_789),  # 5788.6, rounded
        (768, 20_000, 8_683),
        (1024, 20_000, 11_577),
        (3538, 20_000, 40_000),  # two vCPUs: twice the period
        (512, 100_000, 28_943),
    ],
)
def test_the_quota_is_the_lambda_share_of_the_period(memory_mb: int, period_us: int, quota: int) -> None:
    assert quota_us(memory_mb, period_us) == quota
    assert memory.vcpu(memory_mb) == pytest.approx(quota / period_us, abs=1e-4)


def test_a_quota_below_the_kernels_minimum_is_refused_with_the_period_that_would_do() -> None:
    # 128 MB of a 10 ms period is 724 µs: the kernel takes no less than 1000.
    with pytest.raises(ValueError, match="at least 13821 µs"):
        quota_us(128, 10_000)
    assert quota_us(128, 13_821) >= memory.MIN_QUOTA_US
    with pytest.raises(ValueError):
        quota_us(0, 20_000)


# ----------------------------------------------------------------------------- the plan


def test_due_seconds_are_whole_spaced_and_halfway_between_ticks() -> None:
    # The dispatcher ticks on the multiples of the spacing (8 s): the batches are due at 4 past.
    earliest = 1_795_000_001.4  # 1_795_000_000 is a multiple of 8
    assert 1_795_000_000 % 8 == 0
    seconds = due_seconds(earliest, 5, spacing=8)
    assert seconds == [1_795_000_004.0 + 8 * k for k in range(5)]
    assert due_seconds(1_795_000_004.0, 1, spacing=8) == [1_795_000_004.0]
    assert due_seconds(1_795_000_004.2, 1, spacing=8) == [1_795_000_012.0]
    for spacing in (5, 6, 7):
        for first in due_seconds(earliest, 3, spacing):
            assert first == int(first) and first >= earliest
            assert int(first) % spacing == spacing // 2


def test_sizes_take_turns_ascending_then_descending() -> None:
    assert slot_sizes([512, 128, 1769], 3) == [128, 512, 1769, 1769, 512, 128, 128, 512, 1769]
    order = slot_sizes([128, 256, 512], 4)
    assert all(order.count(size) == 4 for size in (128, 256, 512))


# ------------------------------------------------------------------------------- one batch

DUE = 1_795_000_006.0


def test_batch_lateness_names_the_first_and_last_call() -> None:
    figures = batch_lateness([7.0, 1.25, 3.0, 30.0, 2.0, 2.5, 4.0, 5.0, 6.0, 8.0])
    assert figures["count"] == 10
    assert figures["first"] == 1.2  # rounded to 0.1 ms
    assert figures["last"] == figures["max"] == 30.0
    assert figures["p50"] == 4.0  # nearest rank: the 5th of 10
    assert figures["p99"] == 30.0
    assert batch_lateness([]) == {"count": 0}


def test_phases_when_every_record_is_ready_before_its_second() -> None:
    # Ready 200 to 40 ms before the second; the ten calls start 0.1 to 4 ms after it; the last
    # arrives 20 ms after it.
    waits = [(DUE - 0.2 + 0.016 * k, DUE + 0.0001 + 0.0004 * k) for k in range(BATCH)]
    arrived = [DUE + 0.002 * (k + 1) for k in range(BATCH)]
    split = phases(DUE, waits, arrived)
    assert split["ready_ms"] == pytest.approx(-56.0, abs=0.1)  # the last ready: -0.2 + 0.144
    assert split["starts_ms"][0] == pytest.approx(0.1) and split["starts_ms"][-1] == pytest.approx(3.7)
    assert split["starting_ms"] == pytest.approx(3.7, abs=0.05)  # from the second: ready came first
    assert split["executing_ms"] == pytest.approx(20.0, abs=0.05)


def test_phases_when_the_last_record_is_ready_after_its_second() -> None:
    # The start write of the last record ends 40 ms late: the wait returns at once; starting and
    # executing count from that moment, not from the second.
    waits = [(DUE - 0.1, DUE + 0.001)] * (BATCH - 1) + [(DUE + 0.040, DUE + 0.0405)]
    split = phases(DUE, waits, [DUE + 0.045])
    assert split["ready_ms"] == pytest.approx(40.0)
    assert split["starts_ms"][-1] == pytest.approx(40.5)
    assert split["starting_ms"] == pytest.approx(0.5, abs=0.05)
    assert split["executing_ms"] == pytest.approx(5.0, abs=0.05)


def test_phases_need_every_records_wait() -> None:
    split = phases(DUE, [(DUE - 0.1, DUE + 0.001)] * (BATCH - 1), [DUE + 0.01])
    assert split["ready_ms"] is None and split["starting_ms"] is None and split["executing_ms"] is None
    assert len(split["starts_ms"]) == BATCH - 1


def test_outcome_lines_read_hold_and_lateness_by_job() -> None:
    lines = [
        "punctual: worker-1 exited with -9; restarting (restart #1)",
        json.dumps({"message": "run succeeded", "job_id": "job_a", "hold_ms": 231, "lateness_ms": 0}),
        json.dumps({"message": "attempt started by another delivery", "job_id": "job_b"}),
        json.dumps({"message": "run succeeded", "job_id": "job_b", "hold_ms": 244, "lateness_ms": 12}),
        json.dumps({"message": "runs dispatched", "runs": "job_a/r1 job_b/r2"}),
        "{not json",
    ]
    out = outcome_lines(lines)
    assert out["job_a"] == {"redeliveries": 0, "outcome": "run succeeded", "hold_ms": 231, "lateness_ms": 0}
    assert out["job_b"]["redeliveries"] == 1 and out["job_b"]["lateness_ms"] == 12
    assert set(out) == {"job_a", "job_b"}


# ------------------------------------------------------------------- a size and the answer


def _batch(
    last_start: float,
    last_arrival: float,
    *,
    ready: float = -50.0,
    delivered: int = BATCH,
    early: int = 0,
) -> dict[str, Any]:
    starts = [0.2] * (BATCH - 1) + [last_start]
    arrivals = [3.0] * (delivered - 1) + [last_arrival]
    return {
        "size_mb": 0,
        "delivered": delivered,
        "early": early,
        "duplicates": 0,
        "start_ms": batch_lateness(starts),
        "arrival_ms": batch_lateness(arrivals),
        "starts_ms": starts,
        "arrivals_ms": arrivals,
        "recorded_ms": [0.0] * (BATCH - 1) + [round(last_start)],
        "holds_ms": [240.0] * BATCH,
        "ready_ms": ready,
        "starting_ms": last_start - max(0.0, ready),
        "executing_ms": last_arrival - max(0.0, ready),
        "invocations": 1,
        "cpu_ms": {"per_run": 10.0, "until_ready_per_run": 6.0},
        "cgroup": {"throttled_ms": 0.0},
    }


def test_a_size_is_on_time_by_its_worst_batch_when_there_are_fewer_than_a_hundred() -> None:
    on_time = summarize_size(512, [_batch(4.0, 20.0), _batch(9.9, 22.0), _batch(2.0, 18.0)])
    assert on_time["last_start_ms"]["p99"] == 9.9
    assert on_time["on_time"] is True
    assert on_time["on_time_at_arrival"] is False  # every last arrival is over 10 ms
    assert on_time["holding_fits"] is True and on_time["starting_fits"] is True
    assert on_time["executing_fits"] is False
    assert on_time["quota_us"] == 5_789 and on_time["vcpu"] == pytest.approx(0.289, abs=1e-3)
    assert on_time["cpu_per_run_ms"]["median"] == 10.0

    one_late = summarize_size(512, [_batch(4.0, 20.0), _batch(10.1, 22.0), _batch(2.0, 18.0)])
    assert one_late["on_time"] is False


def test_holding_that_overruns_the_second_does_not_fit() -> None:
    late_ready = summarize_size(256, [_batch(40.0, 60.0, ready=39.5), _batch(3.0, 20.0)])
    assert late_ready["holding_fits"] is False
    assert late_ready["starting_fits"] is True  # once ready, the calls started within 0.5 ms
    assert late_ready["on_time"] is False


def test_a_lost_or_early_call_is_never_on_time() -> None:
    assert summarize_size(1769, [_batch(1.0, 5.0, delivered=BATCH - 1)])["on_time"] is False
    assert summarize_size(1769, [_batch(1.0, 5.0, early=1)])["on_time"] is False
    assert summarize_size(1769, [])["on_time"] is False


def test_the_answer_is_the_smallest_size_from_which_every_larger_one_is_on_time() -> None:
    by_size = {
        128: {"on_time": False},
        256: {"on_time": True},  # on time by luck: 512 was not
        512: {"on_time": False},
        768: {"on_time": True},
        1024: {"on_time": True},
        1769: {"on_time": True},
    }
    assert smallest_passing(by_size) == {"smallest_mb": 768, "smallest_passing_anywhere_mb": 256}
    by_size[512]["on_time"] = True
    assert smallest_passing(by_size)["smallest_mb"] == 256
    by_size[1769]["on_time"] = False  # the largest late: no size is the answer
    assert smallest_passing(by_size) == {"smallest_mb": None, "smallest_passing_anywhere_mb": 256}
    assert smallest_passing({}, "holding_fits") == {"smallest_mb": None, "smallest_passing_anywhere_mb": None}


def test_the_holding_estimate_is_the_share_that_does_the_work_within_the_head_start() -> None:
    # 60 ms of a core's CPU within 250 ms needs 0.24 vCPU = 424.6 MB, rounded up.
    assert holding_estimate_mb(60.0, 250) == 425
    assert holding_estimate_mb(250.0, 250) == memory.FULL_VCPU_MB
    assert holding_estimate_mb(60.0, 0) is None
