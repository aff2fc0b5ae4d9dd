"""The scale model: its parameters (``params``) and the capacity planner (``plan``)."""
