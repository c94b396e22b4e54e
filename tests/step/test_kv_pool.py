"""The KV pool against vLLM's own start-up logs, and its arithmetic worked by hand."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from decodecalc.engine.profile import ROOFLINE, VLLM_DEFAULTS
from decodecalc.engine.scheduler import SchedulerLimits, scheduler_limits
from decodecalc.errors import InputError
from decodecalc.loading.catalog import Catalog
from decodecalc.record import replace
from decodecalc.resolving.resolve import resolve
from decodecalc.scenarios.spec import ScenarioSpec
from decodecalc.step.kv_pool import KvPool, kv_pool
from tests.conftest import Run

GIB = 1 << 30
MIB = 1 << 20
DATA = yaml.safe_load((Path(__file__).parents[1] / "data" / "vllm_kv_pool.yaml").read_text())
RUNS: list[dict[str, Any]] = DATA["runs"]


def _pool(run: dict[str, Any]) -> KvPool:
    kv = None if run["kv_cache_dtype"] == "auto" else run["kv_cache_dtype"]
    spec = ScenarioSpec(
        model=run["model"],
        gpu=run["gpu"],
        tp=run["tp"],
        weights=run.get("weights"),
        kv_dtype=kv,
        engine="vllm",
    )
    scenario = resolve(spec, Catalog())
    limits = scheduler_limits(
        scenario.engine,
        scenario.gpu,
        memory_utilization=run["gpu_memory_utilization"],
        max_num_batched_tokens=run["max_num_batched_tokens"],
        max_num_seqs=run["max_num_seqs"],
    )
    return kv_pool(scenario, limits)


def _terms(pool: KvPool) -> dict[str, int]:
    """The pool's terms as the by-hand tests work them out, in their order."""
    return {
        "budget": pool.budget_bytes,
        "weights": pool.weight_bytes,
        "activation": pool.activation_bytes,
        "reserve": pool.reserve_bytes,
        "available": pool.available_bytes,
        "per token": pool.kv_bytes_per_token,
        "blocks": pool.blocks,
        "tokens": pool.tokens,
    }


def test_the_logs_cover_five_models() -> None:
    assert len({run["model"] for run in RUNS}) >= 5
    assert all(run["log"] and run["vllm"] for run in RUNS)


@pytest.mark.parametrize("run", RUNS, ids=[run["log"] for run in RUNS])
def test_pool_matches_the_logged_pool(run: dict[str, Any]) -> None:
    """GPU KV cache size, maximum concurrency at max_model_len and the memory left for the
    cache, each within 5% (a run's `within` says otherwise, with its reason)."""
    pool = _pool(run)
    within = run.get("within", 0.05)
    assert pool.tokens == pytest.approx(run["kv_cache_tokens"], rel=within)
    concurrency = pool.max_concurrency(run["max_model_len"])
    assert concurrency == pytest.approx(run["max_concurrency"], rel=within)
    assert pool.available_bytes / GIB == pytest.approx(run["available_kv_gib"], rel=within)
    weights = pool.weight_bytes / GIB
    assert weights == pytest.approx(run["model_loading_gib"], rel=run.get("weights_within", 0.02))


def test_llama_8b_on_h100_by_hand() -> None:
    """The first logged run, every term by hand.

    budget      (81,559 MiB - 450 MiB CUDA does not report) x 0.95
                = 85,048,950,784 B x 0.95 = 80,796,503,244 B
    weights     8,030,261,248 parameters x 2 B = 16,060,522,496 B: 32 layers x 218,112,000
                (q, o 4096^2 each; k, v 2 x 4096 x 1024; MLP 3 x 4096 x 14336; 2 norms)
                + embedding and LM head 2 x 128,256 x 4096 + the final norm
    activation  the sampler pass, 1,024 rows x 128,256 logits x 15 B = 1,970,012,160 B
                (the forward pass, 8,192 x (3 x 4096 + 3 x 14336) x 2 B = 906,231,808 B, is less)
    reserve     0.25 GiB = 268,435,456 B
    available   80,796,503,244 - 16,060,522,496 - 1,970,012,160 - 268,435,456
                = 62,497,533,132 B (58.21 GiB; the log: 58.11)
    per token   32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B
    blocks      floor(62,497,533,132 / (16 x 131,072)) = 29,801 -> 476,816 tokens (log: 476,016)
    concurrency 29,801 / (8,192 / 16) = 58.21x at 8,192 tokens per request (log: 58.11x)
    """
    pool = _pool(RUNS[0])
    assert _terms(pool) == {
        "budget": 80_796_503_244,
        "weights": 16_060_522_496,
        "activation": 1_970_012_160,
        "reserve": 268_435_456,
        "available": 62_497_533_132,
        "per token": 131_072,
        "blocks": 29_801,
        "tokens": 476_816,
    }
    assert pool.max_concurrency(8192) == pytest.approx(29_801 / 512)


def test_tensor_parallel_adds_the_all_reduce_buffers() -> None:
    """TP 2 halves the weights and each GPU's KV per token, and adds 1.85 GiB of all-reduce
    buffers to the 0.25 GiB reserve: 2.10 GiB (the log: 2.07)."""
    one, two = _pool(RUNS[0]), _pool(RUNS[1])
    assert two.reserve_bytes == GIB // 4 + GIB * 185 // 100
    assert two.kv_bytes_per_token * 2 == one.kv_bytes_per_token


def test_hybrid_layers_are_padded_to_equal_groups() -> None:
    """Gemma 3 27B: 52 windowed and 10 global layers; groups of 10 (the smaller count) pad
    the windowed ones to 60 slots, so a block spans 70 slots of 16 KV heads x 128 x 2 x 2 B
    = 8,192 B each: 573,440 B per token, 8 slots wasted as the log warns."""
    pool = _pool(next(run for run in RUNS if run["model"] == "gemma-3-27b"))
    assert [(k.window, k.layers, k.slots) for k in pool.kinds] == [(1024, 52, 60), (None, 10, 10)]
    assert pool.kv_bytes_per_token == 70 * 8192


def test_windowed_layers_cap_a_long_request() -> None:
    """gpt-oss-20b, 12 windowed (128 tokens) and 12 global layers of equal size at TP 1: a
    131,072-token request holds 131,072 / 16 = 8,192 blocks in the global half and
    ceil((128 - 1 + 8,192) / 16) + 1 = 521 in the windowed half (vLLM's
    SlidingWindowSpec adds a block: the window need not start at a block's edge),
    (8,192 + 521) / 2 = 4,356.5."""
    scenario = resolve(ScenarioSpec(model="gpt-oss-20b", gpu="h100-sxm", engine="vllm"), Catalog())
    pool = kv_pool(scenario, scheduler_limits(scenario.engine, scenario.gpu))
    assert [(k.window, k.slots) for k in pool.kinds] == [(128, 12), (None, 12)]
    assert pool.blocks_per_request(131_072) == Fraction(8713, 2)
    assert pool.max_concurrency(131_072) == pytest.approx(pool.blocks / 4356.5)


def test_a_windowed_request_holds_one_block_more_as_vllm_logs() -> None:
    """The gpt-oss-20b TP 2 log (tests/data/vllm_kv_pool.yaml): 2,591,776 tokens over 2
    groups of 16-token blocks is 2,591,776 x 2 / 16 = 323,972 blocks, and "maximum
    concurrency 316.07" at 8,192 tokens is 323,972 / 1,025 = 316.07: 512 blocks in the
    global group and 512 + 1 in the windowed one (without the extra block, 323,972 /
    1,024 = 316.38). In decodecalc's units (a block over every layer slot) that is
    (512 + 513) / 2 = 512.5 per request."""
    run = next(r for r in RUNS if r["model"] == "gpt-oss-20b")
    pool = _pool(run)
    assert pool.blocks_per_request(8192) == Fraction(1025, 2)
    assert run["max_concurrency"] == pytest.approx(323_972 / 1025, abs=0.005)


def test_weights_that_do_not_fit_leave_no_pool() -> None:
    scenario = resolve(ScenarioSpec(model="llama-3.1-70b", gpu="h100-sxm"), Catalog())
    pool = kv_pool(scenario, scheduler_limits(scenario.engine, scenario.gpu))
    assert pool.available_bytes < 0
    assert (pool.blocks, pool.tokens, pool.max_concurrency(1000)) == (0, 0, 0.0)


def test_pool_needs_a_gpu() -> None:
    scenario = resolve(ScenarioSpec(model="llama-3.1-8b", bandwidth="3.35TB/s"), Catalog())
    with pytest.raises(InputError, match="--gpu"):
        kv_pool(scenario, scheduler_limits(ROOFLINE, None))


@pytest.mark.parametrize(
    ("gpu", "expected"),
    [("h100-sxm", (8192, 1024)), ("a100-80gb", (2048, 256)), ("rtx-4090", (2048, 256))],
)
def test_vllm_defaults_follow_the_gpu(gpu: str, expected: tuple[int, int]) -> None:
    """vLLM's larger budget needs 70 GiB as CUDA reports it and a name without 'a100'."""
    catalog = Catalog()
    scenario = resolve(ScenarioSpec(model="llama-3.1-8b", gpu=gpu, engine="vllm"), catalog)
    limits = scheduler_limits(scenario.engine, scenario.gpu)
    assert (limits.max_num_batched_tokens, limits.max_num_seqs) == expected
    assert (limits.block_size, limits.memory_utilization) == (16, 0.9)


def test_given_limits_replace_the_defaults() -> None:
    limits = scheduler_limits(ROOFLINE, None, max_num_seqs=64, max_num_batched_tokens=None)
    assert (limits.max_num_seqs, limits.max_num_batched_tokens) == (64, 2048)
    assert limits.source.endswith("max-num-seqs given")
    with pytest.raises(TypeError):
        scheduler_limits(ROOFLINE, None, max_seqs=64)


@pytest.mark.parametrize(
    "change",
    [{"max_num_seqs": 0}, {"max_num_batched_tokens": 10**8}, {"memory_utilization": 1.5}],
)
def test_bad_limits_are_refused(change: dict[str, Any]) -> None:
    with pytest.raises(InputError):
        replace(scheduler_limits(ROOFLINE, None), **change)


def test_preset_block_is_the_built_in_fallback() -> None:
    """The engine preset's serving: block and the defaults used without an engine agree."""
    serving = Catalog().engine("vllm").serving
    assert serving is not None
    assert replace(serving, source=VLLM_DEFAULTS.source) == VLLM_DEFAULTS
    assert isinstance(scheduler_limits(ROOFLINE, None), SchedulerLimits)


def _llama_70b_pipeline(tp: int, pp: int) -> KvPool:
    scenario = resolve(
        ScenarioSpec(model="llama-3.1-70b", gpu="h100-sxm", weights="fp8", tp=tp, pp=pp),
        Catalog(),
    )
    return kv_pool(scenario, scheduler_limits(scenario.engine, scenario.gpu))


def test_pipeline_stages_each_hold_their_own_layers_by_hand() -> None:
    """Llama-3.1-70B in FP8 (BF16 cache) on H100s, TP 2 x PP 4: 80 layers in 4 stages of
    20, and a stage's GPU holds only its layers' weights and cache.

    weights     per layer per GPU, 1 B each: q, o 2 x 8192^2 / 2 = 67,108,864; k, v
                2 x 8192 x 1024 / 2 = 8,388,608; MLP 3 x 8192 x 28,672 / 2 = 352,321,536;
                2 norms 16,384 (not split). 20 layers = 1,342,177,280 + 167,772,160
                + 7,046,430,720 + 327,680. The last stage adds the LM head 128,256 x 8192 / 2
                = 525,336,576 and the final norm 8,192: 9,082,052,608 B (the first adds the
                embedding, as large, but no norm: 8,192 B less, so the last decides)
    per token   20 layers x 4 KV heads per GPU x 128 x 2 (K, V) x 2 B = 40,960 B
    budget      (85,520,809,984 B - 450 MiB CUDA does not report) x 0.9 = 76,544,055,705 B
    activation  the sampler pass, 1,024 rows x 128,256 x 15 B = 1,970,012,160 B
    reserve     0.25 GiB + TP's all-reduce buffers 1,986,422,374 = 2,254,857,830 B
    available   76,544,055,705 - 9,082,052,608 - 1,970,012,160 - 2,254,857,830
                = 63,237,133,107 B
    pool        floor(63,237,133,107 / (16 x 40,960)) = 96,492 blocks = 1,543,872 tokens
    Every layer on each GPU (the defect this guards) would leave 35.3 GB of weights and
    163,840 B a token: 226,080 tokens, the same as TP 2 without stages.
    """
    pool = _llama_70b_pipeline(tp=2, pp=4)
    assert [(k.layers, k.slots) for k in pool.kinds] == [(20, 20)]
    assert _terms(pool) == {
        "budget": 76_544_055_705,
        "weights": 9_082_052_608,
        "activation": 1_970_012_160,
        "reserve": 2_254_857_830,
        "available": 63_237_133_107,
        "per token": 40_960,
        "blocks": 96_492,
        "tokens": 1_543_872,
    }
    # 1,500-token requests hold ceil(1,500 / 16) = 94 blocks each: 96,492 / 94 = 1,026.5.
    assert pool.max_concurrency(1500) == pytest.approx(96_492 / 94)
    assert _llama_70b_pipeline(tp=2, pp=1).tokens < pool.tokens / 6


def test_the_stage_with_the_most_layers_decides() -> None:
    """80 layers over 3 stages are 27, 27, 26 (vLLM's split): the first stage holds 27
    layers and the embedding, the most weights and cache, so its pool is the replica's.
    Per GPU at TP 2, 1 B a weight: a layer is 67,108,864 + 8,388,608 + 352,321,536 +
    16,384 = 427,835,392 B (as above), 27 of them 11,551,555,584 B, + the embedding's
    525,336,576 = 12,076,892,160 B; its cache 27 x 4 x 128 x 2 x 2 B = 55,296 B a token."""
    pool = _llama_70b_pipeline(tp=2, pp=3)
    assert [(k.layers, k.slots) for k in pool.kinds] == [(27, 27)]
    assert pool.kv_bytes_per_token == 55_296
    assert pool.weight_bytes == 12_076_892_160


def test_pool_and_estimate_see_the_same_stage() -> None:
    """Serving's pool and estimate's memory check (StepModel.held_bytes, MemoryFit) charge
    the same fullest stage with the same weights and the same cache per token, in the
    same room (step/memory.py server_room: what CUDA reports x utilization, less the
    activation peak and the reserve) and the same whole blocks: estimate's largest batch
    at a context of 1,504 tokens (94 whole blocks) is the pool's concurrency."""
    from decodecalc.step.step import StepModel

    context = 1504
    for tp, pp in ((2, 4), (2, 3), (4, 2), (8, 1)):
        scenario = resolve(
            ScenarioSpec(model="llama-3.1-70b", gpu="h100-sxm", weights="fp8", tp=tp, pp=pp),
            Catalog(),
        )
        pool = kv_pool(scenario, scheduler_limits(scenario.engine, scenario.gpu))
        step = StepModel.at(scenario, 1)
        assert pool.weight_bytes == max(st.stored_weight_bytes for st in step.stages)
        assert step.held_bytes(context) == pool.weight_bytes + context * pool.kv_bytes_per_token
        fit = step.memory(context)
        assert fit is not None and fit.max_batch is not None
        assert fit.room.usable_bytes - pool.weight_bytes == pool.available_bytes
        assert fit.max_batch == math.floor(pool.max_concurrency(context))


def test_data_parallel_attention_ranks_each_hold_a_pool_by_hand(cli: Run) -> None:
    """Review s40 #2: serving sized the pool as if attention were split over TP.
    Qwen3-30B-A3B BF16 on 2 H200 with data-parallel attention (config.json: hidden 2,048,
    48 layers, 32 heads and 4 KV heads of 128, 128 experts of 768, top 8, vocabulary
    151,936, untied). Per layer q, o 2 x 2,048 x 4,096; k, v 2 x 2,048 x 512; q/k norms
    256; 2 norms 4,096; router 128 x 2,048: 19,140,864; x 48 = 918,761,472, + embedding
    and LM head 2 x 151,936 x 2,048 = 622,329,856, + final norm 2,048: 1,541,093,376 held
    whole on each rank; the experts 48 x 128 x 3 x 2,048 x 768 = 28,991,029,248, half on
    each. Weights (1,541,093,376 + 14,495,514,624) x 2 B = 32,073,216,000 B.
    budget      (143,771 - 450) MiB x 0.9 = 150,282,960,896 x 0.9 -> 135,254,664,806 B
    activation  the sampler, 1,024 x 151,936 x 15 = 2,333,736,960 B
    reserve     0.25 GiB + 1.85 GiB = 268,435,456 + 1,986,422,374 = 2,254,857,830 B
    available   135,254,664,806 - 32,073,216,000 - 2,333,736,960 - 2,254,857,830
                = 98,592,854,016 B
    per token   a rank keeps every KV head: 48 x 4 x 128 x 2 x 2 B = 98,304 B
    blocks      floor(98,592,854,016 / (16 x 98,304)) = 62,683 -> 1,002,928 tokens a rank,
                2,005,856 for the replica's two ranks
    requests    of 1,500 tokens (94 blocks): 62,683 / 94 = 666.8 a rank, 1,333.7 in all;
                of 4,500 (282 blocks): 62,683 / 282 = 222.3 a rank, 222 x 2 = 444 whole ones
                run at once (below max-num-seqs), and estimate's largest batch is the same."""
    scenario = resolve(
        ScenarioSpec(model="qwen3-30b-a3b", gpu="h200", tp=2, dp_attention=True, engine="vllm"),
        Catalog(),
    )
    pool = kv_pool(scenario, scheduler_limits(scenario.engine, scenario.gpu))
    assert _terms(pool) == {
        "budget": 135_254_664_806,
        "weights": 32_073_216_000,
        "activation": 2_333_736_960,
        "reserve": 2_254_857_830,
        "available": 98_592_854_016,
        "per token": 98_304,
        "blocks": 62_683,
        "tokens": 1_002_928,
    }
    assert (pool.ranks, pool.replica_tokens) == (2, 2_005_856)
    assert pool.max_concurrency(1500) == pytest.approx(62_683 / 94 * 2)
    common = ["-m", "qwen3-30b-a3b", "-g", "h200", "--tp", "2", "--dp-attention", "--json"]
    served = json.loads(
        cli(
            "serving", *common, "--input-len", "4000", "--output-len", "500",
            "--concurrency", "1000",
        ).out
    )  # fmt: skip
    assert served["kv_pool_tokens"] == 2_005_856
    assert (served["rows"][0]["running"], served["rows"][0]["limit"]) == (444, "kv-pool")
    fit = json.loads(cli("estimate", *common, "-c", "4500").out)
    assert fit["max_batch_that_fits"] == 444


ONE_MODEL_CASES = [
    # Global attention, windowed attention, a hybrid of both, MLA with MoE, TP and PP.
    ("llama-3.1-8b", "h100-sxm", "bf16", 1, 1),
    ("qwen2.5-72b", "h100-sxm", "fp8", 1, 1),
    ("llama-3.1-70b", "h200", "fp8", 2, 2),
    ("mistral-7b-v0.1", "h100-sxm", "fp8", 1, 1),
    ("gemma-3-27b", "h100-sxm", "bf16", 2, 1),
    ("gpt-oss-20b", "h100-sxm", "mxfp4", 1, 1),
    ("deepseek-v3", "h200", "fp8", 8, 1),
]


@pytest.mark.parametrize(("model", "gpu", "weights", "tp", "pp"), ONE_MODEL_CASES)
@pytest.mark.parametrize("context", [1, 1_000, 4_096, 32_768, 100_001])
def test_estimate_never_promises_more_than_the_pool_holds(
    model: str, gpu: str, weights: str, tp: int, pp: int, context: int
) -> None:
    """One memory model (issue: review s39 #1): estimate's largest batch at a context is
    never more than the requests serving's KV pool holds at once for the same
    deployment, and a batch that many fits in estimate's rows."""
    from decodecalc.answers.estimate import estimate

    scenario = resolve(ScenarioSpec(model=model, gpu=gpu, weights=weights, tp=tp, pp=pp), Catalog())
    pool = kv_pool(scenario, scheduler_limits(scenario.engine, scenario.gpu))
    fit = estimate(scenario, [context]).memory
    assert fit is not None and fit.max_batch is not None
    held = math.floor(pool.max_concurrency(context))
    assert fit.max_batch <= held
    if fit.max_batch:
        at_most = replace(scenario, batch=fit.max_batch)
        assert estimate(at_most, [context]).rows[0].fits is True
    beyond = replace(scenario, batch=held + 1)
    assert estimate(beyond, [context]).rows[0].fits is False


@pytest.mark.parametrize(("model", "gpu", "weights", "tp", "pp"), ONE_MODEL_CASES)
def test_plan_picks_no_batch_the_pool_cannot_run(
    model: str, gpu: str, weights: str, tp: int, pp: int
) -> None:
    """plan's step mode solves its batch in the same model: the batch it picks (the
    largest that fits, up to its cap) is one the server's pool runs at the context."""
    from decodecalc.answers.plan import Targets, evaluate

    context = 8_192
    scenario = resolve(ScenarioSpec(model=model, gpu=gpu, weights=weights, tp=tp, pp=pp), Catalog())
    pool = kv_pool(scenario, scheduler_limits(scenario.engine, scenario.gpu))
    option = evaluate(scenario, Targets(context=context, max_batch=100_000))
    held = math.floor(pool.max_concurrency(context))
    assert option.max_batch is not None and option.max_batch <= held
    if option.fits:
        assert option.scenario.batch <= held


def test_plan_picks_the_review_s_batch_of_one(catalog: Catalog) -> None:
    """Qwen2.5-72B FP8/FP8 on one H100 at 4K (tests/step/test_memory.py works the room
    through: 1,233,713,561 B free hold floor(1,233,713,561 / (4,096 x 163,840)) = 1
    sequence): plan picks batch 1, where it picked 6 from capacity x 0.9 alone."""
    from decodecalc.answers.plan import Targets, evaluate

    scenario = resolve(
        ScenarioSpec(model="qwen2.5-72b", gpu="h100-sxm", weights="fp8", kv_dtype="fp8"),
        catalog,
    )
    option = evaluate(scenario, Targets(context=4_096))
    assert (option.max_batch, option.scenario.batch, option.fits) == (1, 1, True)


def test_a_windowed_model_is_held_to_its_pool() -> None:
    """gpt-oss-120b (18 of its 36 layers windowed to 128 tokens) at batch 16 and 8K on one
    H100: the bytes a step holds fit (the longest context at the batch is past 8K), but
    vLLM's pool keeps each windowed layer's window and a chunk (127 + 8,192 tokens), so it
    holds fewer requests than 16; the row does not fit, and the note says why."""
    from decodecalc.answers.estimate import estimate

    scenario = resolve(
        ScenarioSpec(model="gpt-oss-120b", gpu="h100-sxm", batch=16, engine="vllm"), Catalog()
    )
    est = estimate(scenario, [8_192])
    assert est.memory is not None and est.memory.max_context is not None
    assert est.memory.max_context >= 8_192
    pool = kv_pool(scenario, scheduler_limits(scenario.engine, scenario.gpu))
    assert math.floor(pool.max_concurrency(8_192)) < 16
    assert est.rows[0].fits is False
    (note,) = [n for n in est.notes if n.code == "does-not-fit"]
    assert "batch 16 is more requests than the server's KV pool holds" in note.message


@pytest.mark.parametrize(("model", "gpu", "weights", "tp", "pp"), ONE_MODEL_CASES)
@pytest.mark.parametrize("batch", [1, 8, 64])
def test_a_sweep_fits_the_rows_estimate_fits(
    cli: Run, model: str, gpu: str, weights: str, tp: int, pp: int, batch: int
) -> None:
    """The sweep asks the pool once for the longest context it holds at the batch
    (step/fast.py: FastStep._pool_limit) where estimate asks it row by row: the two say
    the same of every row, on each side of that context."""
    flags = ["-m", model, "-g", gpu, "-w", weights, "--tp", str(tp), "--pp", str(pp)]
    flags += ["--batch", str(batch), "--engine", "roofline"]
    contexts = "1,15,16,17,1000,4096,4097,9999,32768,65537,100001,131072"
    swept = cli("sweep", *flags, "-c", contexts, "-f", "jsonl")
    assert swept.code == 0, swept.err
    rows = json.loads(cli("estimate", *flags, "-c", contexts, "--json").out)["rows"]
    estimated = {r["context"]: r["fits"] for r in rows if not r["crossover"]}
    assert {r["context"]: r["fits"] for r in map(json.loads, swept.out.splitlines())} == estimated


@pytest.mark.parametrize(
    ("model", "gpu", "weights", "tp", "pp", "dp_attention"),
    [  # ONE_MODEL_CASES of one kind of layer keeping every token (no window), and DP attention
        ("llama-3.1-8b", "h100-sxm", "bf16", 1, 1, False),
        ("qwen2.5-72b", "h100-sxm", "fp8", 1, 1, False),
        ("llama-3.1-70b", "h200", "fp8", 2, 2, False),
        ("deepseek-v3", "h200", "fp8", 8, 1, False),
        ("deepseek-v3", "h200", "fp8", 8, 1, True),
    ],
)
@pytest.mark.parametrize("batch", [1, 7, 64])
def test_a_fit_that_leaves_the_pool_unasked_is_the_pools_at_the_edge(
    model: str, gpu: str, weights: str, tp: int, pp: int, batch: int, dp_attention: bool
) -> None:
    """StepModel.fits leaves the pool unasked where it limits nothing the byte count does
    not (KvPool.limits_as_bytes: one kind, every token kept, unpadded, no state), as the
    sweep does: around the longest context whose bytes fit, the pool holds the batch
    wherever the bytes fit, so the fit is the one asking the pool gives."""
    from decodecalc.step.step import StepModel

    spec = ScenarioSpec(
        model=model, gpu=gpu, weights=weights, tp=tp, pp=pp, batch=batch, dp_attention=dp_attention
    )
    scenario = resolve(spec, Catalog())
    step = StepModel.of(scenario)
    memory = step.memory(1 << 20)
    assert memory is not None and memory.pool is not None and memory.pool.limits_as_bytes

    def bytes_fit(context: int) -> bool:
        return step.held_bytes(memory.room.held_tokens(context)) <= memory.room.usable_bytes

    longest, beyond = 0, 1 << 30  # the longest context whose bytes fit, by halving
    while beyond - longest > 1:
        middle = (longest + beyond) // 2
        longest, beyond = (middle, beyond) if bytes_fit(middle) else (longest, middle)
    for context in {max(1, longest + d) for d in (-17, -16, -1, 0, 1, 15, 16, 17)}:
        asked = bytes_fit(context) and memory.pool.holds(batch, context)
        assert step.fits(context, memory) == asked == bytes_fit(context)
