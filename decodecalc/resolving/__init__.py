"""From a ScenarioSpec and the preset catalog to a Scenario with its notes: names looked
up, units parsed, the defaults that depend on other inputs filled in."""
