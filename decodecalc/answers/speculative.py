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

from decodecalc.errors import InputError
from decodecalc.record import replace
from decodecalc.scenarios.scenario import Scenario
from decodecalc.scenarios.workload import Speculation
from decodecalc.step.kv_pool import Drafter

VOCABULARY_PADDING = 0.01
"""How far a draft model's vocabulary may differ from its target's and still be the same
tokenizer's: checkpoints pad the embedding to a multiple (Qwen2.5-0.5B's 151,936 rows
against Qwen2.5-7B's 152,064, 0.08% apart). Llama 3's 128,256 against Qwen3's 151,936 are
16% apart: two tokenizers, whose token ids mean different things."""


def drafter(target: Scenario, speculation: Speculation) -> Drafter:
    """What the drafter holds on the target's GPUs (step/kv_pool.py Drafter): a draft
    model's every weight and caching layer; an EAGLE or MTP head's decoder layers alone
    (one like the target's last; MTP's as many as the checkpoint ships), as it reads the
    target's embedding and LM head."""
    draft = draft_scenario(target, speculation)
    if speculation.draft_model is not None:
        model = draft.model
        return Drafter(draft, model.tensor_groups(), model.mixers())
    (last,) = draft.model.layers
    count = max(1, target.model.mtp_layers) if speculation.method == "mtp" else 1
    groups = last.tensor_groups(target.model.hidden_size) * count
    return Drafter(draft, groups, (last.mixer,) * count)


def draft_scenario(target: Scenario, speculation: Speculation) -> Scenario:
    """The drafter as a scenario of its own on the same GPUs and engine. EAGLE's and MTP's
    drafter is one decoder layer like the target's last, reading the target's LM head (its
    embedding is a row gather, not streamed), on the last pipeline stage; a draft model runs
    at the target's TP when its
    heads split that way, else on one GPU, as vLLM's draft_tensor_parallel_size allows.
    Refused: MTP on a checkpoint without MTP layers, a draft model of another vocabulary."""
    model = target.model
    if speculation.method == "mtp" and not model.mtp_layers:
        raise InputError(
            f"speculative method mtp drafts with a checkpoint's own multi-token-prediction "
            f"layers, and {model.id} has none (its config counts none: num_nextn_predict_layers "
            "and mtp_num_hidden_layers are 0 or absent): use eagle or a draft model"
        )
    if speculation.draft_model is None:
        head = replace(
            target.model,
            id=f"{target.model.id}-{speculation.method}-head",
            name=f"{target.model.name} {speculation.method.upper()} head",
            layers=target.model.layers[-1:],
        )
        # One layer is no pipeline: under --pp the head runs on the last stage's GPUs,
        # beside the LM head it reads (where the pool charges its weights).
        return replace(target, model=head, batch=1, pp=1)
    draft = speculation.draft_model
    if abs(draft.vocab_size - model.vocab_size) > VOCABULARY_PADDING * model.vocab_size:
        raise InputError(
            f"draft model {draft.id}'s vocabulary ({draft.vocab_size:,} tokens) is not "
            f"{model.id}'s ({model.vocab_size:,}): a draft model proposes token ids of its "
            "own tokenizer, so it must share the target's"
        )
    tp = target.tp if draft.supports_tp(target.tp) else 1
    weights, overrides, recipe = speculation.draft_weights or (target.weights, (), None)
    return replace(
        target,
        model=draft,
        tp=tp,
        batch=1,
        weights=weights,
        weight_overrides=overrides,
        weights_recipe=recipe,
        link=target.link if tp > 1 else None,
    )
