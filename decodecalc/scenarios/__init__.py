"""A deployment to estimate: its description as given (spec), the resolved Scenario with its
validation, the workload a server carries, the two field tables every door declares them
from, and the rates (price, power) that cost and energy are figured from."""
