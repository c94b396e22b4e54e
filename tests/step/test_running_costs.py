"""The costs that grow with the running sequences (step/running.py): what each is counted
in, worked by hand from the models' configs, and the laws the step keeps with them."""

from __future__ import annotations

import pytest

from decodecalc.engine.profile import Engine, EngineParams
from decodecalc.loading.catalog import Catalog
from decodecalc.record import replace
from decodecalc.step.engine_terms import StepCounts
from decodecalc.step.running import RunningCounts
from decodecalc.step.step import StepModel, expected_step
from tests.conftest import preset_scenario


@pytest.mark.parametrize(
    ("model", "counts"),
    [
        # 80 dense layers: 80 feed-forward passes, 80 mixer layers (all attention).
        ("llama-3.1-70b", (80, 1, 80, 0)),
        # 61 layers of MLA; the first 3 dense (first_k_dense_replace 3), then 58 MoE layers
        # of 8 routed experts per token: 3 + 58 x 8 = 467 feed-forward passes.
        ("deepseek-v3", (467, 1, 61, 0)),
        # 36 layers, every one MoE with 4 experts per token: 36 x 4 = 144.
        ("gpt-oss-120b", (144, 1, 36, 0)),
        # 48 layers, full attention every 4th (full_attention_interval 4): 48 mixers, 36 of
        # them Gated DeltaNet; every layer MoE with 10 experts per token: 48 x 10 = 480.
        ("qwen3-next-80b-a3b", (480, 1, 48, 36)),
    ],
)
def test_counts_per_sequence(catalog: Catalog, model: str, counts: tuple[int, ...]) -> None:
    found = RunningCounts.of(catalog.model(model), 1)
    assert (
        found.per_ffn_pass,
        found.per_running,
        found.per_mixer_sequence,
        found.per_state_sequence,
    ) == counts
    at_64 = RunningCounts.of(catalog.model(model), 64)
    assert at_64.per_ffn_pass == 64 * counts[0]
    assert at_64.per_state_sequence == 64 * counts[3]


def test_a_hybrid_step_pays_its_recurrent_layers(catalog: Catalog) -> None:
    """Qwen3-Next at batch 128, 0.2 us per sequence per recurrent layer and 30 us per
    running request: 128 x 36 x 0.2 us + 128 x 30 us = 0.9216 + 3.84 = 4.7616 ms on top of
    the other fixed costs (none here)."""
    params = EngineParams(1.0, 1.0, per_state_sequence_s=0.2e-6, per_running_s=30e-6)
    counts = StepCounts.of(catalog.model("qwen3-next-80b-a3b"), 128)
    assert counts.fixed_seconds(params) == pytest.approx(4.7616e-3)
    assert dict(counts.running.parts(params) if counts.running else ()) == pytest.approx(
        {"per running request": 3.84e-3, "per sequence per recurrent layer": 0.9216e-3}
    )


def test_zero_costs_name_no_parts(catalog: Catalog) -> None:
    counts = RunningCounts.of(catalog.model("llama-3.1-8b"), 32)
    assert counts.parts(EngineParams(0.8, 0.7)) == ()


RUNNING = EngineParams(
    0.8,
    0.7,
    per_layer_s=20e-6,
    per_ffn_pass_s=1.2e-6,
    per_running_s=40e-6,
    per_mixer_sequence_s=0.9e-6,
    per_state_sequence_s=0.3e-6,
)
"""Every running cost at once, about the size the shipped AMD fits give them."""


@pytest.mark.parametrize("model", ["llama-3.1-8b", "deepseek-v3", "qwen3-next-80b-a3b"])
def test_the_step_grows_with_the_batch_and_stays_above_the_roofline(
    catalog: Catalog, model: str
) -> None:
    """Expected >= roofline at every batch from 1 to 256, and one more running sequence
    never makes the step shorter, at contexts 0, 4,096 and 32,768 (each batch's step
    built once for the three)."""
    weights = "bf16" if model == "llama-3.1-8b" else "fp8"
    tp = 1 if model == "llama-3.1-8b" else 8
    engine = Engine("test", (RUNNING,), "nvidia-datacenter")
    last = dict.fromkeys((0, 4_096, 32_768), 0.0)
    for batch in range(1, 257):
        scenario = preset_scenario(catalog, model, weights, tp=tp, batch=batch)
        step = StepModel.of(replace(scenario, engine=engine))
        for context in last:
            row = step.row(context)
            seconds = expected_step(step, row, RUNNING)
            assert seconds >= row.seconds_per_token, (batch, context)
            assert seconds >= last[context], (batch, context)
            last[context] = seconds


def test_data_parallel_attention_runs_a_gpus_own_sequences(catalog: Catalog) -> None:
    """DeepSeek-V3 (3 dense layers, 58 MoE layers of 8 routed experts a token) on 8 GPUs at
    batch 64. Under TP every GPU runs every sequence: 64 x 61 = 3,904 mixer passes, 64
    requests, and 64 x (3 + 58 x 8) = 29,888 feed-forward passes. With data-parallel
    attention a GPU runs its own 64 / 8 = 8 sequences through its mixers (8 x 61 = 488),
    its scheduler (8) and its replicated dense layers (8 x 3 = 24), while the tensor-
    parallel MoE still sees every routed pair (64 x 58 x 8 = 29,696): 29,720. Under --ep
    the 8 GPUs share the pairs: 29,696 / 8 = 3,712, so 24 + 3,712 = 3,736."""
    tp = preset_scenario(catalog, "deepseek-v3", "fp8", tp=8, batch=64)
    dp = replace(tp, dp_attention=True)
    ep = replace(dp, ep=True)
    for scenario, mixers, running, passes in (
        (tp, 3_904, 64, 29_888),
        (dp, 488, 8, 29_720),
        (ep, 488, 8, 3_736),
    ):
        counts = StepCounts.of(
            scenario.model, scenario.batch, scenario.sequences_per_gpu, scenario.expert_ranks
        )
        assert counts.running is not None
        assert counts.running.per_mixer_sequence == mixers
        assert counts.running.per_running == running
        assert counts.running.per_ffn_pass == counts.passes == passes
