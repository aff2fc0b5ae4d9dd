"""Benchmarks (``make bench``): precision, precision under faults, cost per job, cold start, dispatch.

Benchmarks print and record figures; they assert nothing and are not part of ``make test``.
"""
