"""The engines' limits on what a server is told, on their own so that the field tables
(scenarios/workload.py) read them without loading the profiles."""

MAX_SCHEDULER_LIMIT = 10_000_000
"""Largest chunked-prefill budget or sequence cap accepted (a profile's ``serving:``, an
option, a deployment file): past it a figure is a typo."""
