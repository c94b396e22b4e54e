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

import math
from itertools import pairwise

from decodecalc.errors import InputError
from decodecalc.model.model import Model
from decodecalc.record import record, replace
from decodecalc.scenarios.scenario import Scenario

METHODS = ("eagle", "mtp", "draft")
"""EAGLE and MTP draft with one extra decoder layer on the target's own hidden states and
LM head; "draft" runs a separate small model (a model preset)."""

MAX_PROPOSED = 32
"""Proposed tokens per step: engines use 1 to about 8; more is a typo."""


@record
class Speculation:
    """How a server speculates: the method, k proposed tokens and their acceptance."""

    method: str
    proposed: int
    """k: tokens the drafter proposes per verify step."""
    acceptance: tuple[float, ...]
    """One constant per-token rate a, or k per-position rates (see the module's docstring)."""
    draft_model: Model | None = None
    """The drafter for method "draft" (None for EAGLE and MTP)."""

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise InputError(
                f"speculative method {self.method!r} is not one of {', '.join(METHODS)}"
            )
        if (self.method == "draft") != (self.draft_model is not None):
            raise InputError("a draft-model speculation needs a draft model, and only it does")
        if not 1 <= self.proposed <= MAX_PROPOSED:
            raise InputError(
                f"speculative tokens {self.proposed} must be a whole number from 1 to "
                f"{MAX_PROPOSED}"
            )
        rates = self.acceptance
        if len(rates) not in (1, self.proposed):
            raise InputError(
                f"give one acceptance rate or {self.proposed} per-position rates "
                f"(one per proposed token), not {len(rates)}"
            )
        for rate in rates:
            if math.isnan(rate) or not 0 <= rate < 1:
                raise InputError(f"acceptance {rate} must be from 0 to under 1")
        if any(later > earlier for earlier, later in pairwise(rates)):
            raise InputError(
                "per-position acceptance rates never rise: position i is accepted only when "
                "every earlier one is"
            )

    def position_rates(self) -> tuple[float, ...]:
        """The share of verify steps accepting each proposed position: a^i for a constant
        rate a, else the rates as given."""
        if len(self.acceptance) > 1:
            return self.acceptance
        (rate,) = self.acceptance
        return tuple(rate**i for i in range(1, self.proposed + 1))

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens a verify step emits per sequence: its own token plus every
        accepted proposal, 1 + sum of the position rates."""
        return 1 + sum(self.position_rates())

    @property
    def queries(self) -> int:
        """Query tokens per sequence in the verify pass: the last token and k proposals."""
        return self.proposed + 1


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
