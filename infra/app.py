"""The CDK app: ``cdk synth`` / ``cdk deploy`` run ``python -m infra.app`` (see cdk.json).

Synthesis is offline and needs no credentials: the stack is environment-agnostic unless the
``account``/``region`` context pins it, and it looks nothing up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import App, Aspects, Environment, Tags
from cdk_nag import AwsSolutionsChecks

from infra.stack import PunctualStack
from punctual.cdk.assets import LambdaAssets
from punctual.cdk.config import DeploymentConfig


def build_app(context: Mapping[str, Any] | None = None, *, nag: bool = True) -> tuple[App, PunctualStack]:
    """The app with its one stack; ``context`` replaces what the CDK CLI would pass (tests)."""
    app = App(context=dict(context)) if context is not None else App()
    config = DeploymentConfig.from_context(app.node.try_get_context)
    environment = (
        Environment(account=config.account, region=config.region) if config.account or config.region else None
    )
    stack = PunctualStack(
        app,
        config.name_prefix,
        props=config.props,
        assets=LambdaAssets.prebuilt(),
        env=environment,
        description=f"Punctual job scheduler ({config.stage})",
    )
    Tags.of(stack).add("application", "punctual")
    Tags.of(stack).add("stage", config.stage)
    if nag:
        Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    return app, stack


def main() -> None:
    app, _stack = build_app()
    app.synth()


if __name__ == "__main__":
    main()
