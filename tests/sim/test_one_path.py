"""The simulator runs the worker's own batch path: the function the Lambda handler calls
(``punctual_functions/worker/invocation.py``), never a copy of it that could drift."""

from __future__ import annotations

from typing import Any

import pytest

import punctual.sim.engine
from punctual.sim.scenarios import Load, Scenario, run
from punctual_functions.worker import handler as worker
from punctual_functions.worker import invocation
from punctual_functions.worker.execute import RunExecutor


def test_the_simulator_and_the_lambda_handler_call_the_same_batch_function() -> None:
    assert vars(punctual.sim.engine)["run_batch"] is invocation.run_batch
    assert vars(worker)["run_batch"] is invocation.run_batch


def test_every_worker_batch_of_a_simulation_runs_through_the_handlers_function(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    batches: list[int] = []
    real = invocation.run_batch

    def spy(executor: Any, records: Any, **kwargs: Any) -> list[str]:
        batches.append(len(records))
        return real(executor, records, **kwargs)

    monkeypatch.setattr(punctual.sim.engine, "run_batch", spy)
    result = run(Scenario("one-path", Load(200, minutes=1, lead_seconds=(30.0, 200.0)), first_minute=4))
    assert result.correct and result.expected == 200, result.as_dict()
    assert sum(batches) >= 200, "each run's message went through the handler's batch function"


def test_a_lone_record_in_the_simulator_is_held_and_read_as_the_handler_holds_and_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The handler holds and reads every batch in one request each, a lone record's too; the
    # simulator's own copy of the batch once did that only for batches of two or more.
    arrived: list[int] = []
    original = RunExecutor.arrive

    def arrive(self: RunExecutor, messages: Any) -> None:
        arrived.append(len(messages))
        original(self, messages)

    monkeypatch.setattr(RunExecutor, "arrive", arrive)
    result = run(Scenario("lone", Load(20, minutes=1, lead_seconds=(30.0, 200.0)), first_minute=4))
    assert result.correct, result.as_dict()
    assert 1 in arrived and sum(arrived) >= 20, arrived
