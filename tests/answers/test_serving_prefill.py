"""The prefill efficiency e_p and per-request cost c_req of an engine profile: how serve()
prices a prompt with them, and that the fit recovers them from TTFTs."""

from __future__ import annotations

import pytest

from decodecalc.answers.generate import generate
from decodecalc.answers.serving import prefill_flops_per_token, serve
from decodecalc.calibration.engine_fit import PrefillCase, fit_prefill
from decodecalc.engine.profile import Engine, EngineParams
from decodecalc.engine.scheduler import SchedulerLimits, scheduler_limits
from decodecalc.engine.select import choose_engine
from decodecalc.loading.catalog import Catalog
from decodecalc.record import replace
from decodecalc.scenarios.scenario import Scenario
from decodecalc.scenarios.workload import Workload
from tests.conftest import Run, preset_scenario

PARAMS = EngineParams(weight_efficiency=1.0, kv_efficiency=1.0, prefill_efficiency=0.5)


def _scenario(catalog: Catalog, params: EngineParams) -> tuple[Scenario, SchedulerLimits]:
    scenario = preset_scenario(catalog, "llama-3.1-8b")
    vllm, _ = choose_engine(catalog, "vllm", scenario.gpu)
    engine = Engine("vllm", (params,), "nvidia-datacenter", ("vllm",), vllm.serving)
    return replace(scenario, engine=engine), scheduler_limits(engine, scenario.gpu)


def test_ttft_of_one_request_by_hand(catalog: Catalog) -> None:
    """Llama-3.1-8B BF16 on an H100, one request of 4,000 prompt tokens, e_p 0.5 and c_req
    20 ms: no queue (concurrency 1), one chunk (vLLM's 8,192-token budget), compute-bound.
    Its matmuls, the LM head (128,256 x 4,096 = 525,336,576 params) at the last prompt
    token only: 2 x (7,504,924,672 - 525,336,576) x 4,000 + 2 x 525,336,576
    = 55,837,755,441,152 FLOPs; its causal attention 32 layers x 4 x 32 heads x 128
    x (4,000 x 3,999 / 2) = 524,288 x 7,998,000 = 4,193,255,424,000: 60,031,010,865,152
    FLOPs at 0.5 x 989.4 TFLOP/s = 121.3483 ms. The one decode token beside it, at peak:
    2 x 7,504,924,672 + 524,288 x (4,000 + 4,100) / 2 = 17,133,215,744 FLOPs, 0.0173 ms;
    the weights (15.0 GB at 3.35 TB/s, 4.5 ms) hide under it. TTFT = 121.3483 + 0.0173
    + 20 = 141.3657 ms; at e_p 1 and no c_req the chunk's compute halves: 60.6915 ms."""
    scenario, limits = _scenario(catalog, replace(PARAMS, per_request_s=0.02))
    workload = Workload(4000, 101, concurrency=1)
    result = serve(scenario, workload, limits)
    assert result.queue_s == 0 and result.prefill_chunks == 1
    decode = 17_133_215_744 / 989.4e12
    chunk = 60_031_010_865_152 / 989.4e12
    assert result.ttft_s == pytest.approx(chunk / 0.5 + decode + 0.02, rel=1e-9)
    plain, _ = _scenario(catalog, EngineParams(weight_efficiency=1.0, kv_efficiency=1.0))
    roofline = serve(plain, workload, limits).ttft_s
    assert roofline == pytest.approx(chunk + decode, rel=1e-9)


def test_fit_recovers_the_prefill_efficiency(catalog: Catalog) -> None:
    """TTFTs and TPOTs made at e_p 0.25 give back 0.25 (the golden-section search's
    precision: 0.618^14 of the log range 0.003 to 1, about 0.5%)."""
    cases = []
    for length, concurrency in ((4000, 1), (2000, 4)):
        scenario, limits = _scenario(catalog, PARAMS)
        workload = Workload(length, 101, concurrency=concurrency)
        made = PrefillCase(scenario, workload, limits, 1.0, 1.0).served(0.25)
        cases.append(PrefillCase(scenario, workload, limits, made.ttft_s, made.tpot_s))
    fit = fit_prefill(cases)
    assert fit.prefill_efficiency == pytest.approx(0.25, rel=0.01)
    assert fit.per_request_s == 0


def test_per_request_cost_at_the_family_prefill_efficiency(catalog: Catalog) -> None:
    """Prompts of one size cannot tell c_req from a slower prefill, so at the family's e_p
    c_req is what the TTFTs leave: made 30 ms above the replay at that e_p, it is 30 ms
    (the closed form: sum((m - t) / m^2) / sum(1 / m^2) with every m - t = 30 ms)."""
    scenario, limits = _scenario(catalog, PARAMS)
    cases = []
    for concurrency in (1, 4):
        workload = Workload(1000, 101, concurrency=concurrency)
        made = PrefillCase(scenario, workload, limits, 1.0, 1.0).served(0.4)
        cases.append(PrefillCase(scenario, workload, limits, made.ttft_s + 0.03, made.tpot_s))
    fit = fit_prefill(cases, prior=0.4)
    assert fit.prefill_efficiency == 0.4
    assert fit.per_request_s == pytest.approx(0.03, rel=1e-9)


def test_a_prompt_multiplies_the_lm_head_once(catalog: Catalog) -> None:
    """A server's prompt chunks carry FLOPs per computed token, the LM head counted once a
    request (at its prompt's last token) and spread over the tokens, so a request's chunks
    add up to its prefill. Llama-3.1-8B: 7,504,924,672 multiplied params, LM head
    525,336,576, causal attention A(n) = 32 x 4 x 32 x 128 x n(n - 1)/2 = 524,288 x n(n - 1)/2.
    1,000 prompt tokens: 2 x 6,979,588,096 x 1,000 + 2 x 525,336,576 + A(1,000)
    = 13,959,176,192,000 + 1,050,673,152 + 261,881,856,000 = 14,222,108,721,152 FLOPs,
    generate's prefill. With a 600-token prefix hit half the time, 1,000 - 300 = 700 tokens
    are computed: 2 x 6,979,588,096 x 700 + 2 x 525,336,576 + A(1,000) - 0.5 x A(600)
    = 9,771,423,334,400 + 1,050,673,152 + 261,881,856,000 - 47,107,276,800
    = 9,987,248,586,752 FLOPs over 700 tokens."""
    scenario = preset_scenario(catalog, "llama-3.1-8b")
    whole = Workload(1000, 500, concurrency=1)
    assert prefill_flops_per_token(scenario, whole) == pytest.approx(14_222_108_721.152)
    assert generate(scenario, 1000, 1).prefill.flops == 14_222_108_721_152
    cached = Workload(1000, 200, concurrency=8, prefix_len=600, prefix_hit_rate=0.5)
    assert cached.new_tokens == 700
    assert prefill_flops_per_token(scenario, cached) == pytest.approx(9_987_248_586_752 / 700)


def test_an_unmeasured_prefill_on_a_gpu_without_flops_says_memory_time_only(cli: Run) -> None:
    """The M3 Max's preset gives no FLOP/s, so a prompt costs its memory traffic alone: the
    prefill-unmeasured note says so (not "peak FLOP/s", which would contradict the
    no-compute-rate note beside it), in serving and generate alike."""
    said = (
        "typical has no prefill measured on apple GPUs: prompts cost only their memory "
        "traffic (the GPU's FLOP/s are not known, so their compute is left out entirely) "
        "with no per-request cost, so times to first token are a lower bound"
    )
    workload = ("--input-len", "1000", "--output-len", "100", "--concurrency", "1")
    for args in (("serving", *workload), ("generate", "-p", "1000", "-n", "100")):
        result = cli(*args, "-m", "gemma-3-27b", "-g", "m3-max-64gb")
        assert result.code == 0, result.err
        assert said in result.err and "peak FLOP/s" not in result.err


def test_generate_says_a_prompts_compute_is_left_out_once(cli: Run) -> None:
    """On a GPU without FLOP/s, a profile without prefill figures has its note say the
    prompt's compute is left out; generate does not add the GPU's prefill note, which
    says the same again."""
    result = cli("generate", "-p", "1000", "-n", "100", "-m", "gemma-3-27b", "-g", "m3-max-64gb")
    assert result.code == 0, result.err
    assert "prefill counts memory traffic only" not in result.err
    assert result.err.count("compute is left out") == 1
    roofline = cli(
        "generate", "-p", "1000", "-n", "100", "-m", "gemma-3-27b", "-g", "m3-max-64gb",
        "--engine", "roofline",
    )  # fmt: skip
    assert "prefill counts memory traffic only" in roofline.err  # no profile: the GPU's note
