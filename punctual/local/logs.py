"""One readable line per log record for the local stack (on AWS the logs stay structured JSON)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

from punctual_functions.core.observability import logger

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
_NOISE = {
    "location",
    "timestamp",
    "service",
    "cold_start",
    "function_name",
    "function_memory_size",
    "function_arn",
    "function_request_id",
    "xray_trace_id",
    "sampling_rate",
    "color_message",
}


class ReadableFormatter(LambdaPowertoolsFormatter):
    """``07:01:02.123 worker-1  INFO  run succeeded  job_id=… run_id=… attempt=1  lateness_ms=0``

    A Powertools formatter (the logger keeps appending Lambda context keys to it), printed as text.
    """

    def __init__(self, role: str) -> None:
        super().__init__()
        self.role = role

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC).strftime("%H:%M:%S.%f")[:-3]
        extras = {
            key: value
            for key, value in vars(record).items()
            if key not in _STANDARD and key not in _NOISE and not key.startswith("_") and value is not None
        }
        details = "  ".join(f"{key}={value}" for key, value in extras.items())
        line = f"{stamp} {self.role:<11} {record.levelname:<5} {record.getMessage()}"
        if details:
            line += f"  {details}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def use_readable_logs(role: str) -> None:
    formatter = ReadableFormatter(role)
    for handler in logger.handlers:
        handler.setFormatter(formatter)
