"""Measured points, the least-squares fit of efficiency and overhead to them, and where a
fit is saved between runs.
"""
