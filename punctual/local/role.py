"""Entry point of one local role process: ``python -m punctual.local.role api|dispatcher|worker``."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time

from punctual.cdk.config import WORKER_MAX_CONCURRENCY, WORKER_RECURSIVE_LOOP
from punctual.local.env import parse_tokens
from punctual_functions.core.settings import Settings

# Lower priority for the dispatcher role: see ``main``.
DISPATCHER_NICENESS = 10
# Overrides the worker's recursive-loop setting (tests: what Lambda's default would do).
RECURSIVE_LOOP_ENV = "PUNCTUAL_WORKER_RECURSIVE_LOOP"
# A worker process's SQS pollers (each hands its batches to invocations of their own: ``roles.EventSource``).
WORKER_POLLERS = 4


def exit_with_parent() -> None:
    """Leave when the supervisor is gone (killed with SIGKILL, say), instead of lingering on."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(1)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="punctual-role")
    parser.add_argument("role", choices=["api", "dispatcher", "worker"])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--tick-seconds", type=float, default=60.0)
    parser.add_argument("--pollers", type=int, default=WORKER_POLLERS, help="Worker: threads polling SQS.")
    parser.add_argument(
        "--max-concurrency",
        type=int,
        default=WORKER_MAX_CONCURRENCY,
        help="Worker: invocations in flight at once (the event source's MaximumConcurrency).",
    )
    parser.add_argument("--name", default=None, help="How this process is named in the logs.")
    args = parser.parse_args(argv)
    if os.environ.get("PUNCTUAL_LOG_FORMAT", "text") != "json":
        from punctual.local.logs import use_readable_logs

        use_readable_logs(args.name or args.role)
    # SIGTERM from the supervisor: leave at once; in-flight work is safe in the emulator.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    exit_with_parent()
    settings = Settings.from_env()
    from punctual.local import roles
    from punctual.local.gateway import serve

    try:
        if args.role == "api":
            serve(args.host, args.port, parse_tokens(os.environ.get("PUNCTUAL_TOKENS")))
        elif args.role == "dispatcher":
            # On AWS every function has its own CPU; here all roles share the machine's few cores,
            # and a tick's burst of dispatches (work for runs a minute ahead) made workers calling a
            # target at its second wait for a core. The dispatcher yields to them.
            os.nice(DISPATCHER_NICENESS)
            roles.run_dispatcher(settings, args.tick_seconds)
        else:
            recursive_loop = os.environ.get(RECURSIVE_LOOP_ENV, WORKER_RECURSIVE_LOOP)
            if recursive_loop not in ("Allow", "Terminate"):
                parser.error(f"{RECURSIVE_LOOP_ENV} must be Allow or Terminate, not {recursive_loop!r}")
            roles.run_worker(settings, args.pollers, args.max_concurrency, recursive_loop)  # type: ignore[arg-type]
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
