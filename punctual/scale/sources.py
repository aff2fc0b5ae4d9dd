"""The sources the scale model's parameters cite (``punctual/scale/params.py``, ``prices.py``):
AWS's published figures, and this project's own measurements."""

from __future__ import annotations

AWS_SQS_ESM_SCALING = (
    "AWS Lambda Developer Guide, 'Configuring scaling behavior for SQS event source mappings' "
    "(https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html)"
)
AWS_PROVISIONED_POLLERS = (
    "AWS News Blog, 'AWS Lambda SQS provisioned mode' (14 Nov 2025); Lambda API ProvisionedPollerConfig"
)
AWS_ESM_SCALING_MODES = (
    "AWS Lambda Developer Guide, 'Configuring scaling behavior for SQS event source mappings': maximum"
    " concurrency and provisioned mode 'are mutually exclusive options'; CloudFormation"
    " AWS::Lambda::EventSourceMapping ScalingConfig: MaximumConcurrency 2 to 1,000;"
    " ProvisionedPollerConfig: MaximumPollers 2 to 2,000, default 200"
)
AWS_POLLER_INVOCATIONS = (
    "remktr.com, 'Crush SQS latency with Lambda provisioned pollers' (2025): 'each poller can push"
    " about 1 MB/s and up to 10 concurrent invokes'; Lambda API ProvisionedPollerConfig: MinimumPollers"
    " at most 200"
)
AWS_LAMBDA_QUOTAS = "AWS Lambda Developer Guide, 'Lambda quotas' (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html)"
AWS_LAMBDA_SCALING = (
    "AWS Lambda Developer Guide, 'Lambda scaling behavior': per function and Region, 1,000 execution"
    " environments every 10 seconds, refilled continuously, unused rate not kept"
    " (https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html)"
)
AWS_LAMBDA_LIFECYCLE = (
    "AWS Lambda Developer Guide, 'Understanding the Lambda execution environment lifecycle': an idle"
    " environment is kept for a time Lambda does not publish, and Lambda 'periodically terminates"
    " execution environments', even of functions invoked continuously; both figures here are assumed"
    " (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html)"
)
AWS_LAMBDA_MEMORY = (
    "AWS Lambda Developer Guide, 'Configure Lambda function memory' "
    "(https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html)"
)
AWS_SQS_QUOTAS = (
    "Amazon SQS Developer Guide, 'Amazon SQS message quotas' "
    "(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html)"
)
AWS_SQS_TIMERS = (
    "Amazon SQS Developer Guide, 'Amazon SQS message timers' "
    "(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-message-timers.html)"
)
AWS_DDB_PARTITIONS = (
    "Amazon DynamoDB Developer Guide, 'Partitions and data distribution' and 'Burst and adaptive "
    "capacity' (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.Partitions.html)"
)
AWS_DDB_THROTTLING = (
    "Amazon DynamoDB Developer Guide, 'Key range throughput exceeded (hot partitions)': each partition"
    " of a table or a global secondary index has its own read and write maximums, and 'partition-level"
    " throttling operates independently for reads and writes'"
    " (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/throttling-key-range-limit-exceeded-mitigation.html)"
)
AWS_DDB_WARM = (
    "Amazon DynamoDB Developer Guide, 'Understanding DynamoDB warm throughput in different scenarios':"
    " a new on-demand table starts with a warm throughput of 12,000 read and 4,000 write units a"
    " second; a global secondary index has a warm throughput of its own"
    " (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html)"
)
AWS_DDB_ON_DEMAND = (
    "Amazon DynamoDB Developer Guide, 'On-demand capacity mode' (initial throughput, 'up to double "
    "the previous peak') and 'Service quotas' (40,000 read and write request units per table) "
    "(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/on-demand-capacity-mode.html)"
)
AWS_DDB_LATENCY = (
    "not published as a distribution: DynamoDB promises 'single-digit millisecond' requests "
    "(https://aws.amazon.com/dynamodb/); a stated assumption"
)
BOTOCORE_STANDARD_RETRIES = (
    "botocore, standard retry mode (botocore/retries/standard.py: at most max_attempts, delay "
    "random() x min(20, 2^(attempt-1)) s); max_attempts as punctual_functions/core/resources.py sets it"
)
ESM_LATENCY = (
    "bitesizedserverless.com, 'Serverless messaging latency compared' (2022): SQS standard queue to a "
    "warm Lambda through the event source mapping, 1,024 messages, eu-west-1"
)
EVENTBRIDGE_RULE = (
    "Amazon EventBridge User Guide, 'Creating a rule that runs on a schedule': rate(1 minute), "
    "'the precision of a schedule is one minute'; its delay after the minute is not published"
)
BENCH_DISPATCH = (
    "measured on this project: make bench, bench/results/dispatch.json (dispatcher CPU per dispatch)"
)
BENCH_COST = "measured on this project: make bench, bench/results/cost.json (requests and CPU per job)"
BENCH_WORKER_CPU = "measured on this project: make bench, bench/results/worker_cpu.json (worker CPU per run)"
BENCH_COLDSTART = "measured on this project: make bench, bench/results/coldstart.json (handler import time)"
