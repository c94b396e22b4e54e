"""The forward model: what one step of a scenario streams, computes and sends, and how long it takes
at the roofline and as an engine measures it. The only place a step time is computed."""
