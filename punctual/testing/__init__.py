"""What the tests, the simulator (``punctual/sim/``) and the benchmarks (``bench/``) share, and what a
user's own tests may use: the local stack as a process (``stack``), a loopback webhook receiver that
stamps each arrival (``receiver``), and the in-memory table (``fakes``: ``MemoryStore`` implements
``punctual_functions.core.ports.Tables`` and passes the same contract tests as the DynamoDB store).
``punctual/sim/`` and ``bench/`` run the code Lambda runs and import nothing from ``tests/``."""
