"""Punctual as AWS CDK constructs (the ``cdk`` extra of ``punctual-aws``): ``Scheduler``, the whole service
in one construct, and ``Job``, a job declared beside the code it calls, with its ``Schedule`` and
``Target``. docs/cdk.md has a complete app.

The names load on first use: ``punctual.cdk.assets`` (the Lambda assets, which the project's tests
and benchmarks build) needs no CDK, and importing the CDK starts its Node.js runtime."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from punctual.cdk.assets import LambdaAssets
    from punctual.cdk.config import SchedulerProps
    from punctual.cdk.job import Job, Schedule, Target
    from punctual.cdk.scheduler import Scheduler

_MODULES = {
    "LambdaAssets": "punctual.cdk.assets",
    "SchedulerProps": "punctual.cdk.config",
    "Job": "punctual.cdk.job",
    "Schedule": "punctual.cdk.job",
    "Target": "punctual.cdk.job",
    "Scheduler": "punctual.cdk.scheduler",
}
__all__ = ["Job", "LambdaAssets", "Schedule", "Scheduler", "SchedulerProps", "Target"]


def __getattr__(name: str) -> Any:
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        return getattr(import_module(_MODULES[name]), name)
    except ModuleNotFoundError as error:
        if error.name and error.name.split(".")[0] in ("aws_cdk", "constructs", "cdk_nag"):
            raise ImportError(
                "punctual.cdk needs the AWS CDK libraries: pip install 'punctual-aws[cdk]'"
            ) from error
        raise
