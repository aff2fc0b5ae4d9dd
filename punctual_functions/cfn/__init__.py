"""CloudFormation custom resources of the CDK constructs (``punctual.cdk``)."""
