"""End to end: ``punctual jobs changes``, ``version``, ``compare`` and ``restore`` against the real local
stack, as a user runs them."""

from __future__ import annotations

import pytest

from punctual.testing.receiver import Receiver
from tests.e2e.test_cli import Cli, cli, field, receiver

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("local-stack")]
__all__ = ["cli", "receiver"]  # the fixtures, shared with test_cli.py


def test_a_jobs_trail_shows_each_change_and_an_earlier_revision_comes_back(
    cli: Cli, receiver: Receiver
) -> None:
    job_id = field(
        cli.ok("jobs", "create", "--rate", "30 minutes", "--url", receiver.url + "/a").out, "job id"
    )
    cli.ok("jobs", "pause", job_id, "--note", "maintenance")
    cli.ok("jobs", "resume", job_id)
    trail = cli.ok("jobs", "changes", job_id).out
    lines = trail.splitlines()
    assert lines[0].split()[:6] == ["REVISION", "AT", "ACTION", "BY", "NOTE", "CHANGED"]
    assert [line.split()[2] for line in lines[1:]] == ["resumed", "paused", "created"]
    assert "maintenance" in trail and "status" in trail
    as_json = cli.ok("jobs", "changes", job_id, "--json").json
    assert as_json["items"][1]["diff"]["status"] == ["ACTIVE", "PAUSED"]
    assert cli.ok("jobs", "version", job_id, "1").json["schedule"]["rate"] == "30 minutes"
    compared = cli.ok("jobs", "compare", job_id, "1", "2").out
    assert "status" in compared and '"PAUSED"' in compared
    restored = cli.ok("jobs", "restore", job_id, "1", "--note", "as it was", "--json").json
    assert restored["revision"] == 4 and restored["status"] == "ACTIVE"
    assert cli("jobs", "version", job_id, "9").code == 3, "a revision that is not there: not found"
    cli.ok("jobs", "cancel", job_id)
