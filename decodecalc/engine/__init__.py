"""Engines: a profile's parameters per GPU family, its scheduler defaults, and which profile stands
in for a GPU family or a typical engine."""
