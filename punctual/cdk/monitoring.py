"""Alarms and a dashboard: what an operator looks at when jobs fire late or fail."""

from __future__ import annotations

from typing import Final

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_apigatewayv2 as apigatewayv2
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from punctual.cdk.config import SchedulerProps
from punctual.cdk.queues import WorkQueues

# The dispatcher logs one "sweep finished" line per tick with the lag in seconds (now minus the
# oldest unswept bucket); a metric filter turns it into a metric without an SDK call.
SWEEP_FINISHED_MESSAGE: Final = "sweep finished"
LAG_METRIC_NAME: Final = "DispatcherLagSeconds"
# From the worker's outcome lines (punctual_functions/worker/execute.py, _outcome_fields): how long before its
# due time each attempt's message reached a worker (the head start's effect), and each run's lateness.
HOLD_METRIC_NAME: Final = "RunHoldMs"
# Lambda's own JSON line for each environment's start (its system log, level INFO): a record status
# other than "success" is a worker that failed before its handler ran.
INIT_REPORT_TYPE: Final = "platform.initReport"
INIT_ERRORS_METRIC_NAME: Final = "WorkerInitErrors"
LATENESS_METRIC_NAME: Final = "RunLatenessMs"

_ONE_MINUTE: Final = Duration.minutes(1)
_FIVE_MINUTES: Final = Duration.minutes(5)


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: SchedulerProps,
        api: apigateway.RestApi | apigatewayv2.HttpApi,
        dispatcher: lambda_.Function,
        dispatcher_logs: logs.ILogGroup,
        worker: lambda_.Function,
        worker_logs: logs.ILogGroup,
        api_function: lambda_.Function,
        queues: WorkQueues,
        table: dynamodb.ITable,
    ) -> None:
        super().__init__(scope, construct_id)
        prefix = config.name_prefix
        self.lag_metric = self._lag_metric(config, dispatcher_logs)
        self.hold_metric, self.lateness_metric = self._run_metrics(config, worker_logs)
        self.init_errors_metric = self._init_errors_metric(config, worker_logs)
        above = cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD
        at_least = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD

        def make_alarm(
            construct_id: str,
            description: str,
            metric: cloudwatch.IMetric,
            threshold: float,
            comparison: cloudwatch.ComparisonOperator,
            periods: int = 1,
            datapoints: int | None = None,
            missing: cloudwatch.TreatMissingData = cloudwatch.TreatMissingData.NOT_BREACHING,
        ) -> cloudwatch.Alarm:
            """One alarm; its name is its id in kebab case after the stack's prefix."""
            name = "".join(f"-{c.lower()}" if c.isupper() else c for c in construct_id).lstrip("-")
            return cloudwatch.Alarm(
                self,
                construct_id,
                alarm_name=f"{prefix}-{name}",
                alarm_description=description,
                metric=metric,
                threshold=threshold,
                comparison_operator=comparison,
                evaluation_periods=periods,
                datapoints_to_alarm=datapoints,
                treat_missing_data=missing,
            )

        alarms = [
            make_alarm(
                "DlqNotEmpty",
                "Runs failed for good and their messages are in the dead-letter queue.",
                queues.dead_letter_queue.metric_approximate_number_of_messages_visible(
                    period=_ONE_MINUTE, statistic="Maximum"
                ),
                0,
                above,
            ),
            make_alarm(
                "DispatcherErrors",
                "Dispatcher ticks fail (two of the last three minutes).",
                dispatcher.metric_errors(period=_ONE_MINUTE, statistic="Sum"),
                1,
                at_least,
                periods=3,
                datapoints=2,
            ),
            make_alarm(
                "WorkerErrors",
                "Worker invocations fail as a whole (crash or timeout), not single runs.",
                worker.metric_errors(period=_FIVE_MINUTES, statistic="Sum"),
                1,
                at_least,
            ),
            make_alarm(
                "WorkerInitErrors",
                "The worker fails before its handler runs (an import error, a missing dependency, "
                "a setting it refuses): each batch it received stays hidden for the queue's "
                "visibility timeout (90 minutes). See operations.md, worker-init-errors.",
                self.init_errors_metric,
                1,
                at_least,
            ),
            make_alarm(
                "WorkerThrottles",
                "The worker is throttled: runs start late. Raise the account's "
                "concurrency or the event source's maximum concurrency.",
                worker.metric_throttles(period=_FIVE_MINUTES, statistic="Sum"),
                1,
                at_least,
            ),
            make_alarm(
                "OldestMessageAge",
                "A work message has waited longer than any retry through the queue "
                "should take: the workers are not keeping up or a message is stuck.",
                queues.work_queue.metric_approximate_age_of_oldest_message(
                    period=_ONE_MINUTE, statistic="Maximum"
                ),
                config.oldest_message_alarm_seconds,
                above,
                periods=5,
            ),
            make_alarm(
                "DispatcherLag",
                "The dispatcher's sweep is falling behind where a healthy one would be. "
                "A dispatcher that stopped reporting turns this alarm to INSUFFICIENT_DATA, "
                "which notifies too.",
                self.lag_metric,
                config.dispatcher_lag_alarm_seconds,
                above,
                periods=3,
                # Not "breaching": a new stack has no datapoints for its first minutes, and a
                # breaching alarm would be in ALARM from its creation. Missing data leaves the state
                # to the data there is; a silence of three periods is INSUFFICIENT_DATA, notified.
                missing=cloudwatch.TreatMissingData.MISSING,
            ),
        ]
        self.alarms: dict[str, cloudwatch.Alarm] = {a.node.id: a for a in alarms}
        # The key of the stack's own alarm topic; None with an operator's topic (alarm_topic_arn).
        self.alarm_topic_key: kms.IKey | None = None
        self.alarm_topic = self._alarm_topic(config)
        for alarm in self.alarms.values():
            alarm.add_alarm_action(actions.SnsAction(self.alarm_topic))
            alarm.add_ok_action(actions.SnsAction(self.alarm_topic))
        # A dispatcher that stopped ticking writes no lag: the lag alarm's silence is news too.
        self.alarms["DispatcherLag"].add_insufficient_data_action(actions.SnsAction(self.alarm_topic))

        self.dashboard = self._dashboard(config, api, api_function, dispatcher, worker, queues, table)

    def _alarm_topic(self, config: SchedulerProps) -> sns.ITopic:
        """The operator's topic, or one of the stack's, so that a fresh deployment's alarms reach
        someone (alarm_email) rather than nobody."""
        if config.alarm_topic_arn:
            return sns.Topic.from_topic_arn(self, "AlarmTopic", config.alarm_topic_arn)
        cloudwatch_service = iam.ServicePrincipal("cloudwatch.amazonaws.com")
        # Encrypted at rest: CloudWatch cannot use the AWS-managed SNS key (its policy is AWS's), so
        # the topic has a key of its own whose policy lets CloudWatch encrypt what it publishes.
        key = kms.Key(
            self,
            "AlarmTopicKey",
            description=f"Punctual {config.stage}: encrypts the alarm topic",
            enable_key_rotation=True,
            # Nothing but the topic uses it, and the topic goes with the stack.
            removal_policy=RemovalPolicy.DESTROY,
        )
        key.add_to_resource_policy(
            iam.PolicyStatement(
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                principals=[cloudwatch_service],
                resources=["*"],  # in a key policy, "*" is this key
            )
        )
        # The key policy's other statement (CDK's default) hands the key to the account's IAM
        # policies: that is how the worker's own policy may grant it (a job alerting to this topic).
        self.alarm_topic_key = key
        topic = sns.Topic(
            self,
            "AlarmTopic",
            display_name=f"Punctual {config.stage} alarms",
            master_key=key,
            enforce_ssl=True,
        )
        # The SSL-only policy replaces the topic's default one: let CloudWatch alarms of this account
        # publish explicitly.
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                actions=["sns:Publish"],
                principals=[cloudwatch_service],
                resources=[topic.topic_arn],
                conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}},
            )
        )
        if config.alarm_email:
            topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
        return topic

    def _log_metric(
        self,
        config: SchedulerProps,
        construct_id: str,
        log_group: logs.ILogGroup,
        pattern: logs.IFilterPattern,
        *,
        name: str,
        value: str,
        period: Duration,
        statistic: str,
        unit: cloudwatch.Unit | None = None,
    ) -> cloudwatch.Metric:
        """A metric of the lines of ``log_group`` that ``pattern`` matches (``value``: a field of the
        line, or a count), through a metric filter: no SDK call in the functions."""
        namespace = f"Punctual/{config.stage}"
        logs.MetricFilter(
            self,
            construct_id,
            log_group=log_group,
            filter_pattern=pattern,
            metric_namespace=namespace,
            metric_name=name,
            metric_value=value,
            unit=unit,
        )
        return cloudwatch.Metric(
            namespace=namespace, metric_name=name, period=period, statistic=statistic, unit=unit
        )

    def _lag_metric(self, config: SchedulerProps, dispatcher_logs: logs.ILogGroup) -> cloudwatch.Metric:
        pattern = logs.FilterPattern.all(
            logs.FilterPattern.string_value("$.message", "=", SWEEP_FINISHED_MESSAGE),
            # lag_seconds is a JSON number, and only a numeric comparison matches a number:
            # FilterPattern.exists renders a quoted "*", a string wildcard, which never would,
            # and the alarm would take the silence for lag for good. The lag is never negative.
            logs.FilterPattern.number_value("$.lag_seconds", ">=", 0),
        )
        return self._log_metric(
            config,
            "DispatcherLagFilter",
            dispatcher_logs,
            pattern,
            name=LAG_METRIC_NAME,
            value="$.lag_seconds",
            period=_ONE_MINUTE,
            statistic="Maximum",
            unit=cloudwatch.Unit.SECONDS,
        )

    def _init_errors_metric(self, config: SchedulerProps, worker_logs: logs.ILogGroup) -> cloudwatch.Metric:
        """Environments of the worker that failed to start, from Lambda's ``platform.initReport``."""
        pattern = logs.FilterPattern.all(
            logs.FilterPattern.string_value("$.type", "=", INIT_REPORT_TYPE),
            logs.FilterPattern.string_value("$.record.status", "!=", "success"),
        )
        return self._log_metric(
            config,
            "WorkerInitErrorsFilter",
            worker_logs,
            pattern,
            name=INIT_ERRORS_METRIC_NAME,
            value="1",
            period=_FIVE_MINUTES,
            statistic="Sum",
        )

    def _run_metrics(
        self, config: SchedulerProps, worker_logs: logs.ILogGroup
    ) -> tuple[cloudwatch.Metric, cloudwatch.Metric]:
        """Each run's hold and lateness, from the worker's outcome lines (numbers: only a numeric
        comparison matches them). Plotted, not alarmed on: they say whether the head start suits
        the deployment (docs/deploy.md), and lateness has its own alerts per job."""
        # Only an outcome line has a hold, a number of either sign. Two comparisons with 0 match any
        # number: AWS documents numeric literals, but no negative one.
        pattern = logs.FilterPattern.all(
            logs.FilterPattern.any(
                logs.FilterPattern.number_value("$.hold_ms", ">=", 0),
                logs.FilterPattern.number_value("$.hold_ms", "<", 0),
            ),
            logs.FilterPattern.number_value("$.lateness_ms", ">=", 0),
        )
        hold, lateness = (
            self._log_metric(
                config,
                construct_id,
                worker_logs,
                pattern,
                name=name,
                value=field,
                period=_ONE_MINUTE,
                statistic="Average",
                unit=cloudwatch.Unit.MILLISECONDS,
            )
            for construct_id, name, field in (
                ("RunHoldFilter", HOLD_METRIC_NAME, "$.hold_ms"),
                ("RunLatenessFilter", LATENESS_METRIC_NAME, "$.lateness_ms"),
            )
        )
        return hold, lateness

    def _dashboard(
        self,
        config: SchedulerProps,
        api: apigateway.RestApi | apigatewayv2.HttpApi,
        api_function: lambda_.Function,
        dispatcher: lambda_.Function,
        worker: lambda_.Function,
        queues: WorkQueues,
        table: dynamodb.ITable,
    ) -> cloudwatch.Dashboard:
        # Dashboard names are one namespace per account, across regions: the same stage deployed in
        # two regions needs two names.
        dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=f"{config.name_prefix}-{Stack.of(self).region}"
        )
        work, dlq = queues.work_queue, queues.dead_letter_queue
        dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(
                title="Alarms", alarms=list(self.alarms.values()), width=24, height=3
            )
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="API requests and errors",
                left=[api.metric_count(), api.metric_client_error(), api.metric_server_error()],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="API latency (p50, p99)",
                left=[api.metric_latency(statistic="p50"), api.metric_latency(statistic="p99")],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="api function errors and duration",
                left=[api_function.metric_errors()],
                right=[api_function.metric_duration(statistic="p99")],
                width=8,
            ),
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Dispatcher lag (s)", left=[self.lag_metric], width=8),
            cloudwatch.GraphWidget(
                title="Dispatcher invocations, errors, duration",
                left=[dispatcher.metric_invocations(), dispatcher.metric_errors()],
                right=[dispatcher.metric_duration(statistic="Maximum")],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Worker invocations, errors, throttles, concurrency",
                left=[worker.metric_invocations(), worker.metric_errors(), worker.metric_throttles()],
                right=[worker.metric("ConcurrentExecutions", statistic="Maximum", period=_ONE_MINUTE)],
                width=8,
            ),
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Runs: hold before the second (ms; p50, p99, min)",
                left=[
                    self.hold_metric.with_(statistic="p50", label="hold p50"),
                    self.hold_metric.with_(statistic="p99", label="hold p99"),
                    self.hold_metric.with_(statistic="Minimum", label="hold min (below 0: arrived late)"),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Runs: lateness (ms; p50, p99, max)",
                left=[
                    self.lateness_metric.with_(statistic="p50", label="lateness p50"),
                    self.lateness_metric.with_(statistic="p99", label="lateness p99"),
                    self.lateness_metric.with_(statistic="Maximum", label="lateness max"),
                ],
                width=12,
            ),
        )
        dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Work queue: visible, in flight, delayed",
                left=[
                    work.metric_approximate_number_of_messages_visible(),
                    work.metric_approximate_number_of_messages_not_visible(),
                    work.metric("ApproximateNumberOfMessagesDelayed"),
                ],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Oldest message age (s) and DLQ depth",
                left=[work.metric_approximate_age_of_oldest_message(statistic="Maximum")],
                right=[dlq.metric_approximate_number_of_messages_visible(statistic="Maximum")],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Table: consumed capacity and throttle events",
                left=[
                    table.metric_consumed_read_capacity_units(),
                    table.metric_consumed_write_capacity_units(),
                ],
                right=[
                    table.metric("ReadThrottleEvents", statistic="Sum"),
                    table.metric("WriteThrottleEvents", statistic="Sum"),
                ],
                width=8,
            ),
        )
        return dashboard
