"""The settings a deployment runs with, as the capacity planner recommends them (``plan``) and the
simulator runs them (``punctual/sim/``): the engine's settings, the functions' memory, the worker's event
source, and the quotas and table settings a large deployment asks AWS for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from punctual.cdk.config import PROVISIONED_MAXIMUM_POLLERS, PROVISIONED_MINIMUM_POLLERS
from punctual.scale.params import Parameters
from punctual_functions.core.resources import API_MEMORY_MB, DISPATCHER_MEMORY_MB, WORKER_MEMORY_MB
from punctual_functions.core.settings import Settings


@dataclass(frozen=True)
class Deployment:
    """The settings a deployment runs with: what ``punctual plan`` recommends and a scenario sets."""

    shard_count: int = 8
    sweep_invocations: int = 1
    lookahead_seconds: int = 120
    dispatch_concurrency: int = 4
    head_start_ms: int = 250
    worker_batch_size: int = 10
    worker_batching_window_seconds: int = 0
    worker_max_concurrency: int = 50
    provisioned_pollers: bool = False
    # Provisioned mode's MinimumPollers: the pollers kept ready (each serves some concurrent
    # invocations, ``Parameters.esm_invocations_per_poller``), so that a steady load finds the event
    # source scaled instead of waiting for it to scale (0: the mode's own minimum).
    minimum_pollers: int = 0
    # Provisioned mode's MaximumPollers: what it scales to at most, and so its most invocations at
    # once (0: AWS's default, 200). AWS takes no MaximumConcurrency with it: ``worker_max_concurrency``
    # applies in the default mode only.
    maximum_pollers: int = 0
    tick_seconds: int = (
        60  # the dispatcher's schedule (EventBridge: a minute; the local stack may tick faster)
    )
    memory_mb: Mapping[str, int] = field(
        default_factory=lambda: {
            "dispatcher": DISPATCHER_MEMORY_MB,
            "worker": WORKER_MEMORY_MB,
            "api": API_MEMORY_MB,
        }
    )
    # Quotas and table settings a large deployment asks AWS for (None: the defaults of ``Parameters``):
    # the account's Lambda concurrency, the table's on-demand maximum (read and write request units
    # a second), and its warm throughput (what it serves at once, without first doubling its peak).
    account_concurrency: int | None = None
    table_max_wcu: int | None = None
    table_max_rcu: int | None = None
    table_warm_wcu: int | None = None
    table_warm_rcu: int | None = None
    # The owner index's warm throughput (its capacity is its own: a new one serves 4,000 writes a
    # second at once, and the index takes about one write per job created or ended).
    index_warm_wcu: int | None = None
    # The table's capacity mode: "on_demand", or "provisioned" with auto scaling up to these maxima
    # (units a second; the CDK's ``table_*_units`` and ``index_*_units`` settings).
    capacity_mode: str = "on_demand"
    table_max_write_units: int | None = None
    table_max_read_units: int | None = None
    index_max_write_units: int | None = None
    # ... and the minima auto scaling keeps (a steady load is served from the deploy on, not after
    # auto scaling has climbed from the CDK's default of 5).
    table_min_write_units: int | None = None
    table_min_read_units: int | None = None
    index_min_write_units: int | None = None

    def parameters(self, params: Parameters) -> Parameters:
        """``params`` as this deployment changes them (its memory sizes and quotas)."""
        changes: dict[str, Any] = {"memory_mb": dict(self.memory_mb)}
        if self.account_concurrency is not None:
            changes["lambda_account_concurrency"] = self.account_concurrency
        if self.table_max_wcu is not None:
            changes["ddb_table_wcu"] = self.table_max_wcu
        if self.table_max_rcu is not None:
            changes["ddb_table_rcu"] = self.table_max_rcu
        if self.table_warm_wcu is not None:  # warm throughput: as if that were half its peak so far
            changes["ddb_initial_peak_wcu"] = self.table_warm_wcu / 2
        if self.table_warm_rcu is not None:
            changes["ddb_initial_peak_rcu"] = self.table_warm_rcu / 2
        if self.index_warm_wcu is not None:
            changes["ddb_index_initial_peak_wcu"] = self.index_warm_wcu / 2
        if self.capacity_mode == "provisioned":
            # Auto scaling up to the maxima: the table serves them, with no on-demand doubling (how
            # fast it scales up to them is not simulated: docs/scale.md, "Limits of the model").
            for units, quota, peak in (
                (self.table_max_write_units, "ddb_table_wcu", "ddb_initial_peak_wcu"),
                (self.table_max_read_units, "ddb_table_rcu", "ddb_initial_peak_rcu"),
                (self.index_max_write_units, None, "ddb_index_initial_peak_wcu"),
            ):
                if units is not None:
                    if quota is not None:
                        changes[quota] = units
                    changes[peak] = units / 2
        return params.replace(**changes)

    def invocation_ceiling(self, params: Parameters) -> int:
        """The most worker invocations the event source runs at once: its MaximumConcurrency in the
        default mode, what its MaximumPollers serve in provisioned mode."""
        if self.provisioned_pollers:
            pollers = self.maximum_pollers or PROVISIONED_MAXIMUM_POLLERS
            return min(params.esm_provisioned_max_concurrency, pollers * params.esm_invocations_per_poller)
        return min(params.esm_max_concurrency, self.worker_max_concurrency)

    def cdk_context(self) -> dict[str, int | str]:
        """The CDK context (``cdk deploy -c key=value``) that deploys these settings: each one a
        ``SchedulerProps`` field (punctual/cdk/config.py), so that what is deployed is what was
        simulated. The event source takes a maximum concurrency or provisioned pollers, never both."""
        context: dict[str, int | str] = {
            "shard_count": self.shard_count,
            "sweep_invocations": self.sweep_invocations,
            "dispatch_concurrency": self.dispatch_concurrency,
            "lookahead_seconds": self.lookahead_seconds,
            "worker_batch_size": self.worker_batch_size,
        }
        if self.worker_batching_window_seconds:
            context["worker_batching_window_seconds"] = self.worker_batching_window_seconds
        if self.capacity_mode == "provisioned":
            context["table_capacity_mode"] = "provisioned"
            for key in (
                "table_min_write_units",
                "table_max_write_units",
                "table_min_read_units",
                "table_max_read_units",
                "index_min_write_units",
                "index_max_write_units",
            ):
                if getattr(self, key) is not None:
                    context[key] = getattr(self, key)
        if self.provisioned_pollers:
            context["worker_minimum_pollers"] = max(PROVISIONED_MINIMUM_POLLERS, self.minimum_pollers)
            context["worker_maximum_pollers"] = self.maximum_pollers or PROVISIONED_MAXIMUM_POLLERS
        else:
            context["worker_max_concurrency"] = self.worker_max_concurrency
        return context

    @property
    def groups(self) -> int:
        """How many groups of shards the simulated one stands for."""
        return self.sweep_invocations

    def settings(self, *, whole: bool = False) -> Settings:
        """The engine's settings in the simulated group: its share of the shards, swept by one
        invocation; ``whole``: the whole deployment's (every shard, its sweep fanned out)."""
        if self.shard_count % self.sweep_invocations:
            raise ValueError("shard_count must be a multiple of sweep_invocations in a simulation")
        return Settings(
            table_name="sim",
            queue_url="sim://work",
            dlq_url="sim://dlq",
            shard_count=self.shard_count if whole else self.shard_count // self.sweep_invocations,
            lookahead_seconds=self.lookahead_seconds,
            sweep_invocations=self.sweep_invocations if whole else 1,
            dispatch_concurrency=self.dispatch_concurrency,
            head_start_ms=self.head_start_ms,
        )
