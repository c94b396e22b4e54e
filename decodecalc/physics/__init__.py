"""The physics of a decode step, pure and typed: formats, hardware, layer kinds, the
model built from them, and the estimator, generation and sweep arithmetic on top.

Nothing here reads a file or knows the command line; docs/physics.md holds the
equations with worked numbers.
"""
