"""A deployment to estimate: its description as given (spec), the resolved Scenario with its
validation, and the rates (price, power) that cost and energy are figured from."""
