"""The web console: the page (``static/``), how it is served (``assets``), and ``punctual console``'s
signing server (``server``). docs/console.md."""
