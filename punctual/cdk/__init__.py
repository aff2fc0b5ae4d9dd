"""Punctual as AWS CDK constructs (``pip install 'punctual[cdk]'``): ``Scheduler``, the whole service
in one construct, and ``Job``, a job declared beside the code it calls, with its ``Schedule`` and
``Target``. docs/cdk.md has a complete app."""

from punctual.cdk.assets import LambdaAssets
from punctual.cdk.config import SchedulerProps
from punctual.cdk.job import Job, Schedule, Target
from punctual.cdk.scheduler import Scheduler

__all__ = ["Job", "LambdaAssets", "Schedule", "Scheduler", "SchedulerProps", "Target"]
