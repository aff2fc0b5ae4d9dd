"""The in-memory table: ``store.MemoryStore``, with its calendars (``calendars``) and target limits
(``limits``) mixed in."""
