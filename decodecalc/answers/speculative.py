"""Speculative decoding (docs/serving.md, "Speculative decoding").

A drafter proposes k tokens; the target model checks them all in one verify pass of k + 1
query tokens per sequence and keeps the longest accepted run plus one token of its own. The
verify pass reads the weights and each sequence's KV cache once, as a plain decode step
does, so while a step is memory-bound the extra queries are almost free; their arithmetic
grows k + 1 times, so past some batch the step turns compute-bound and speculation stops
paying. Proposing costs k passes of the drafter.

Acceptance is given as vLLM logs it: per position i, the share of verify steps in which
the i-th proposed token was accepted (which needs every earlier one accepted too, so the
rates never rise). A constant per-token rate a gives a^i at position i. Tokens per verify
step are then 1 + the sum of the rates: (1 - a^(k+1)) / (1 - a) for a constant a.
"""

from __future__ import annotations

from decodecalc.record import replace
from decodecalc.scenarios.scenario import Scenario
from decodecalc.scenarios.workload import Speculation


def draft_scenario(target: Scenario, speculation: Speculation) -> Scenario:
    """The drafter as a scenario of its own on the same GPUs and engine. EAGLE's and MTP's
    drafter is one decoder layer like the target's last, reading the target's LM head (its
    embedding is a row gather, not streamed); a draft model runs at the target's TP when its
    heads split that way, else on one GPU, as vLLM's draft_tensor_parallel_size allows."""
    if speculation.draft_model is None:
        head = replace(
            target.model,
            id=f"{target.model.id}-{speculation.method}-head",
            name=f"{target.model.name} {speculation.method.upper()} head",
            layers=target.model.layers[-1:],
        )
        return replace(target, model=head, batch=1)
    draft = speculation.draft_model
    tp = target.tp if draft.supports_tp(target.tp) else 1
    return replace(
        target,
        model=draft,
        tp=tp,
        batch=1,
        weight_overrides=(),
        weights_recipe=None,
        link=target.link if tp > 1 else None,
    )
