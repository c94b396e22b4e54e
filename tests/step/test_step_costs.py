"""Four figures of the step model that only the documentation's examples used to guard,
each worked out by hand: the KV a GQA-unaware kernel reads, the per-sequence cost's batch
factor, the wait for admission in a closed loop, and which way a TP shard rounds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from decodecalc.answers.serving import ServingResult, serve
from decodecalc.engine.profile import ROOFLINE, EngineParams
from decodecalc.engine.scheduler import scheduler_limits
from decodecalc.loading.catalog import Catalog
from decodecalc.model.tensors import Sharding, TensorGroup
from decodecalc.scenarios.workload import Workload
from decodecalc.step.engine_terms import StepCounts, kv_read_factor
from decodecalc.step.parallelism import held_params
from tests.conftest import preset_scenario


class TestKvReadFactor:
    """A kernel unaware of grouped-query attention reads each KV head once per query head
    that uses it: per layer and token it reads 2 x head_dim x (query heads on the GPU)
    elements where the cache holds 2 x head_dim x (KV heads on the GPU)."""

    @pytest.mark.parametrize(
        ("tp", "factor"),
        [
            # Llama-3.1-8B: 32 query heads, 8 KV heads, head_dim 128.
            # TP 1: read 2 x 128 x 32 = 8,192 of 2 x 128 x 8 = 2,048 cached: 4.
            (1, 4.0),
            # TP 2: 16 query heads and 4 KV heads a GPU: 4,096 / 1,024 = 4.
            (2, 4.0),
            # TP 8: 4 and 1: 1,024 / 256 = 4.
            (8, 4.0),
            # TP 16: 2 query heads a GPU, and 8 KV heads cannot split 16 ways, so each GPU
            # keeps one whole KV head: 2 x 128 x 2 = 512 read of 2 x 128 x 1 = 256: 2.
            (16, 2.0),
            # TP 32: 1 query head and 1 KV head a GPU: nothing is read twice.
            (32, 1.0),
        ],
    )
    def test_gqa_reads_query_heads_over_kv_heads(
        self, catalog: Catalog, tp: int, factor: float
    ) -> None:
        scenario = preset_scenario(catalog, "llama-3.1-8b", tp=tp)
        assert kv_read_factor(scenario) == factor

    def test_multi_head_attention_reads_its_cache_once(self, catalog: Catalog) -> None:
        """Llama-2-7B has as many KV heads as query heads (32 and 32): 1."""
        assert kv_read_factor(preset_scenario(catalog, "llama-2-7b")) == 1.0

    def test_mla_reads_its_latent_once(self, catalog: Catalog) -> None:
        """DeepSeek-V3 caches one latent per token and layer, which every head reads: 1."""
        scenario = preset_scenario(catalog, "deepseek-v3", "fp8", "bf16", "h200", tp=8)
        assert kv_read_factor(scenario) == 1.0


class TestPerSequenceCost:
    """The per-sequence cost is paid once per token per pass through a layer's block: B x
    (dense layers + MoE layers x experts per token) passes in a step of B sequences."""

    @pytest.mark.parametrize(
        ("model", "per_token"),
        [
            ("llama-3.1-8b", 32),  # 32 dense layers
            ("mixtral-8x7b", 64),  # 32 MoE layers x 2 experts per token
            ("deepseek-v3", 467),  # 3 dense layers + 58 MoE layers x 8 experts = 3 + 464
        ],
    )
    @pytest.mark.parametrize("batch", [1, 7, 64])
    def test_passes_grow_with_the_batch(
        self, catalog: Catalog, model: str, per_token: int, batch: int
    ) -> None:
        assert StepCounts.of(catalog.model(model), batch).passes == batch * per_token

    def test_only_the_per_sequence_cost_scales_with_the_batch(self, catalog: Catalog) -> None:
        """Mixtral-8x7B at 1 us a layer, 10 us a step, 2 us an MoE layer, 0.5 us a pass:
        32 + 10 + 64 + 0.5 x 64 B us; B = 1: 138 us, B = 8: 106 + 256 = 362 us."""
        params = EngineParams(
            weight_efficiency=1.0,
            kv_efficiency=1.0,
            per_layer_s=1e-6,
            per_step_s=10e-6,
            per_moe_layer_s=2e-6,
            per_sequence_s=0.5e-6,
        )
        model = catalog.model("mixtral-8x7b")
        assert StepCounts.of(model, 1).fixed_seconds(params) == pytest.approx(138e-6)
        assert StepCounts.of(model, 8).fixed_seconds(params) == pytest.approx(362e-6)


class TestAdmissionWait:
    """The engine admits a request only between steps. In a closed loop the next request
    arrives just after a step ends while the others keep the engine busy, so it waits out
    one mean step t; alone it finds the engine idle. Past the running limit R the requests
    queue for a slot, which frees once a cycle (t, then the service time S): by Little's
    law a request waits (C / R - 1) cycles, then its step."""

    @staticmethod
    def closed(catalog: Catalog, concurrency: int, max_num_seqs: int = 8) -> ServingResult:
        scenario = preset_scenario(catalog, "llama-3.1-8b", "fp8", "fp8")
        limits = scheduler_limits(ROOFLINE, scenario.gpu, max_num_seqs=max_num_seqs)
        return serve(scenario, Workload(1000, 200, concurrency=concurrency), limits)

    @staticmethod
    def mean_step(result: ServingResult) -> float:
        r = result
        return r.decode_step_s + r.chunk_share * (r.mixed_step_s - r.decode_step_s)

    def test_alone_it_waits_for_nothing(self, catalog: Catalog) -> None:
        assert self.closed(catalog, 1).queue_s == 0

    @pytest.mark.parametrize("concurrency", [2, 8])
    def test_within_the_limit_it_waits_one_mean_step(
        self, catalog: Catalog, concurrency: int
    ) -> None:
        r = self.closed(catalog, concurrency)
        assert r.running == concurrency
        assert r.queue_s == pytest.approx(self.mean_step(r), rel=1e-12)

    def test_past_the_limit_it_waits_for_a_slot_too(self, catalog: Catalog) -> None:
        """C = 24 over R = 8 slots: (24 / 8 - 1) = 2 cycles of t + S, then t: 3t + 2S."""
        r = self.closed(catalog, 24)
        t = self.mean_step(r)
        service = r.e2e_s - r.queue_s - r.per_request_s
        assert r.running == 8
        assert r.queue_s == pytest.approx(3 * t + 2 * service, rel=1e-12)


class TestHeldParams:
    """A shard that does not divide evenly is counted at its largest: the GPU that holds the
    most is the one that runs out of memory first (and sets the step)."""

    @pytest.mark.parametrize(
        ("group", "tp", "held"),
        [
            # 10 parameters over 3 GPUs: shards of 4, 3 and 3; the largest is 4.
            (TensorGroup("mlp", 10, True, Sharding.SPLIT), 3, 4),
            (TensorGroup("mlp", 12, True, Sharding.SPLIT), 3, 4),  # even: 4 each
            # 8 KV heads of 100 parameters over 3 GPUs: 3, 3 and 2 heads; the largest 300.
            (TensorGroup("kv", 800, True, Sharding.KV_HEADS, kv_heads=8), 3, 300),
            # over 16 GPUs each keeps one whole head: 100, never 800 / 16 = 50.
            (TensorGroup("kv", 800, True, Sharding.KV_HEADS, kv_heads=8), 16, 100),
            (TensorGroup("norm", 7, True, Sharding.REPLICATED), 3, 7),
        ],
        ids=["split-uneven", "split-even", "kv-uneven", "kv-replicated", "replicated"],
    )
    def test_uneven_tp_rounds_up(self, group: TensorGroup, tp: int, held: int) -> None:
        assert held_params(group, tp, dp_attention=False) == held

    def test_data_parallel_attention_holds_all_but_the_experts(self) -> None:
        """Every rank holds a whole copy outside the routed experts; 10 experts' worth of
        parameters (1,000) over 3 GPUs is still ceil(1,000 / 3) = 334 a GPU."""
        attention = TensorGroup("attention", 10, True, Sharding.SPLIT)
        experts = TensorGroup(
            "experts", 1000, True, Sharding.SPLIT, experts=10, experts_per_token=2
        )
        assert held_params(attention, 3, dp_attention=True) == 10
        assert held_params(experts, 3, dp_attention=True) == 334

    @given(st.integers(1, 10**12), st.integers(1, 1024))
    def test_the_shards_never_hold_less_than_the_whole(self, params: int, tp: int) -> None:
        """Rounded up, tp shards hold at least every parameter, and less than one more
        each: params <= tp x held < params + tp."""
        held = held_params(TensorGroup("g", params, True, Sharding.SPLIT), tp, False)
        assert params <= tp * held < params + tp
