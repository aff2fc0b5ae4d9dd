"""The simulator: the engine's own code in virtual time against models of DynamoDB, SQS, Lambda
and EventBridge (docs/scale.md)."""
