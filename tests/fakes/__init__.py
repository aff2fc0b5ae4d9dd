"""In-memory implementations of the ports (punctual_functions/core/ports.py), for tests of the logic.

They keep DynamoDB's and SQS's semantics that the logic relies on (conditional writes, all-or-none
transactions, listing order and cursors, message delays and visibility), and ``tests/contract`` runs
the same suite against them and the real adapters on moto, so they cannot drift.
"""
