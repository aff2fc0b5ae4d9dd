"""``punctual plan``: the deployment's defaults up to 10,000 jobs a minute, and for more the fan-out,
the event source, the quotas and the table settings the scale model asks for (docs/scale.md)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from punctual.cdk.config import SchedulerProps
from punctual.cli import main
from punctual.scale.costs import dynamodb_usd
from punctual.scale.deployment import Deployment
from punctual.scale.params import DEFAULTS
from punctual.scale.plan import plan


@pytest.mark.parametrize("jobs", [1, 1_000, 9_000])
def test_up_to_nine_thousand_a_minute_the_defaults_serve_it(jobs: int) -> None:
    result = plan(jobs)
    assert result.deployment == Deployment() and result.quotas == []


def test_a_sweep_is_given_the_cpu_that_made_half_as_much_again_still_ends_within_its_tick() -> None:
    """The margin (docs/scale.md): a sweep's CPU x1.5, after its staggered start, ends within 90 % of
    the tick. One sweep takes about 9,600 jobs a minute; fanned out, each starts up to 10 s late."""
    from punctual.scale.plan import SWEEP_END_SHARE, dispatch_cpu, sweep_seconds

    for jobs in (9_000, 10_000, 100_000, 1_000_000):
        d = plan(jobs).deployment
        stagger = 10.0 if d.sweep_invocations > 1 else 0.0
        cpu = jobs / d.sweep_invocations * dispatch_cpu(DEFAULTS, 0.3) / 1000
        assert stagger + 1.5 * cpu <= 60 * SWEEP_END_SHARE, (jobs, d.sweep_invocations)
        assert cpu <= sweep_seconds(d.sweep_invocations)
    assert plan(10_000).deployment.sweep_invocations == 2


def test_a_million_a_minute_fans_the_sweep_out_and_asks_for_quotas() -> None:
    result = plan(1_000_000)
    d = result.deployment
    assert d.sweep_invocations > 50 and d.shard_count % d.sweep_invocations == 0
    assert d.shard_count >= 2 * d.sweep_invocations and d.provisioned_pollers
    assert d.account_concurrency and d.account_concurrency > 1000
    assert d.capacity_mode == "provisioned" and (d.table_max_write_units or 0) > 40_000
    assert any("Lambda concurrent executions" in quota for quota in result.quotas)
    assert result.usd_per_month > 0


def test_more_jobs_never_need_fewer_sweeps_or_workers() -> None:
    loads = [1_000, 30_000, 100_000, 300_000, 1_000_000]
    plans = [plan(jobs).deployment for jobs in loads]
    assert [p.sweep_invocations for p in plans] == sorted(p.sweep_invocations for p in plans)
    assert [p.worker_max_concurrency for p in plans] == sorted(p.worker_max_concurrency for p in plans)


def test_the_command_prints_the_settings_and_says_what_the_cdk_app_cannot_set() -> None:
    out = CliRunner().invoke(main, ["plan", "--jobs-per-minute", "1000000"])
    assert out.exit_code == 0, out.output
    assert "-c sweep_invocations=" in out.output and "-c worker_maximum_pollers=" in out.output
    assert "worker_max_concurrency" not in out.output, "AWS takes pollers or a maximum concurrency"
    assert "provisioned pollers" in out.output
    spike = CliRunner().invoke(main, ["plan", "--jobs-per-minute", "1000000", "--spike"])
    assert "UpdateTable" in spike.output, "an on-demand table's maximum and warm throughput: by hand"
    data = json.loads(CliRunner().invoke(main, ["plan", "--jobs-per-minute", "5000", "--json"]).output)
    assert data["settings"]["sweep_invocations"] == 1 and data["quotas"] == [] and data["simulated"] is None


def test_a_load_of_nothing_is_refused() -> None:
    out = CliRunner().invoke(main, ["plan", "--jobs-per-minute", "0"])
    assert out.exit_code == 2 and "jobs-per-minute" in out.output


@pytest.mark.parametrize("jobs", [10_000, 100_000, 1_000_000])
def test_the_deploy_line_is_a_valid_cdk_config_of_what_is_simulated(jobs: int) -> None:
    """Each key the plan prints is a ``SchedulerProps`` field the synth takes (so never a maximum
    concurrency with provisioned pollers, which AWS refuses), holding the deployment's own value;
    and the simulator's invocation ceiling is what those settings give on AWS."""
    d = plan(jobs).deployment
    context = d.cdk_context()
    props = SchedulerProps.model_validate(context)
    for key, value in context.items():
        assert getattr(props, key) == value
    assert (props.worker_provisioned_pollers is not None) == d.provisioned_pollers
    if d.provisioned_pollers:
        minimum, maximum = props.worker_provisioned_pollers or (0, 0)
        assert minimum == max(2, d.minimum_pollers) and maximum == d.maximum_pollers
        ceiling = maximum * DEFAULTS.esm_invocations_per_poller
        assert d.invocation_ceiling(DEFAULTS) == min(ceiling, DEFAULTS.esm_provisioned_max_concurrency)
        # In provisioned mode ``worker_max_concurrency`` is the load's concurrency, not a setting.
        assert d.invocation_ceiling(DEFAULTS) >= d.worker_max_concurrency
    else:
        assert props.worker_maximum_concurrency == d.worker_max_concurrency
        assert d.invocation_ceiling(DEFAULTS) == d.worker_max_concurrency


def test_a_load_beyond_what_maximum_concurrency_may_be_set_to_is_planned_with_pollers() -> None:
    """MaximumConcurrency is at most 1,000: a load that needs more is planned in provisioned mode,
    never printed with a setting the synth (or AWS) would refuse."""
    loads = [10_000, 30_000, 100_000, 300_000, 1_000_000]
    for d in (plan(jobs).deployment for jobs in loads):
        if not d.provisioned_pollers:
            assert d.worker_max_concurrency <= DEFAULTS.esm_maximum_concurrency_setting


def test_a_steady_dense_load_gets_the_cheaper_provisioned_table_and_a_spike_stays_on_demand() -> None:
    """Provisioned with auto scaling costs less for a steady load (each unit busy at the target
    utilization); a spike after an idle hour would meet capacity scaled down, so it stays on-demand.
    The plan says what the other mode would cost."""
    steady, spike, small = plan(1_000_000), plan(1_000_000, spike=True), plan(10_000)
    assert steady.deployment.capacity_mode == "provisioned"
    d = steady.deployment
    assert 5 < (d.table_min_write_units or 0) < (d.table_max_write_units or 0), "served from the deploy on"
    assert 5 < (d.index_min_write_units or 0) < (d.index_max_write_units or 0)
    assert sum(steady.usd_per_million.values()) < sum(steady.other_mode_usd_per_million.values())
    assert steady.usd_per_million["pollers"] > 0 and small.usd_per_million["pollers"] == 0
    assert spike.deployment.capacity_mode == "on_demand" and small.deployment.capacity_mode == "on_demand"
    out = CliRunner().invoke(main, ["plan", "--jobs-per-minute", "1000000"])
    assert (
        "-c table_capacity_mode=provisioned" in out.output and "on-demand at this steady load" in out.output
    )


def test_a_provisioned_table_is_simulated_up_to_its_maxima_and_priced_by_the_unit_hour() -> None:
    d = plan(1_000_000).deployment
    params = d.parameters(DEFAULTS)
    assert params.ddb_table_wcu == d.table_max_write_units
    assert 2 * params.ddb_initial_peak_wcu == d.table_max_write_units, "no on-demand doubling"
    assert 2 * params.ddb_index_initial_peak_wcu == d.index_max_write_units
    on_demand = dynamodb_usd(DEFAULTS, 5e6, 1e6, provisioned=False)
    provisioned = dynamodb_usd(DEFAULTS, 5e6, 1e6, provisioned=True)
    assert on_demand == 5 * 0.625 + 0.125
    assert provisioned == (5e6 * 0.00065 + 1e6 * 0.00013) / 0.7 / 3600


def test_the_cli_page_shows_what_the_command_prints() -> None:
    """docs/cli.md's example of ``punctual plan`` is the command's output, line for line."""
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    command = "$ punctual plan --jobs-per-minute 1000000\n"
    shown = page[page.index(command) + len(command) :].split("```", 1)[0]
    out = CliRunner().invoke(main, ["plan", "--jobs-per-minute", "1000000"])
    assert out.exit_code == 0 and out.output == shown
