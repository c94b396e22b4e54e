"""The prefill efficiency e_p and per-request cost c_req of an engine profile: how serve()
prices a prompt with them, and that the fit recovers them from TTFTs."""

from __future__ import annotations

import pytest

from decodecalc.answers.serving import serve
from decodecalc.calibration.engine_fit import PrefillCase, fit_prefill
from decodecalc.engine.profile import Engine, EngineParams
from decodecalc.engine.scheduler import SchedulerLimits, scheduler_limits
from decodecalc.engine.select import choose_engine
from decodecalc.loading.catalog import Catalog
from decodecalc.record import replace
from decodecalc.scenarios.scenario import Scenario
from decodecalc.scenarios.workload import Workload
from tests.conftest import preset_scenario

PARAMS = EngineParams(weight_efficiency=1.0, kv_efficiency=1.0, prefill_efficiency=0.5)


def _scenario(catalog: Catalog, params: EngineParams) -> tuple[Scenario, SchedulerLimits]:
    scenario = preset_scenario(catalog, "llama-3.1-8b")
    vllm, _ = choose_engine(catalog, "vllm", scenario.gpu)
    engine = Engine("vllm", (params,), "nvidia-datacenter", ("vllm",), vllm.serving)
    return replace(scenario, engine=engine), scheduler_limits(engine, scenario.gpu)


def test_ttft_of_one_request_by_hand(catalog: Catalog) -> None:
    """Llama-3.1-8B BF16 on an H100, one request of 4,000 prompt tokens, e_p 0.5 and c_req
    20 ms: no queue (concurrency 1), one chunk (vLLM's 8,192-token budget), compute-bound.
    Its matmuls are 2 x 7,504,924,672 x 4,000 = 6.004e13 FLOPs, at 0.5 x 989.4 TFLOP/s
    121.36 ms; its causal attention at most 4 x 4,096 x 4,000^2 / 2 x 32 = 4.19e12, 8.48
    ms more; the one decode token beside it 2 x 7.5e9 FLOPs, 0.03 ms at peak; the weights
    (15.0 GB at 3.35 TB/s, 4.5 ms) hide under it. TTFT = 121.36 ms + 20 ms = 141.36 ms at
    least, 141.36 + 8.48 + 0.03 = 149.87 ms at most; at e_p 1 and no c_req the chunk's
    compute halves: 60.68 to 65.0 ms."""
    scenario, limits = _scenario(catalog, replace(PARAMS, per_request_s=0.02))
    workload = Workload(4000, 101, concurrency=1)
    result = serve(scenario, workload, limits)
    assert result.queue_s == 0 and result.prefill_chunks == 1
    assert 0.14136 < result.ttft_s < 0.14987
    plain, _ = _scenario(catalog, EngineParams(weight_efficiency=1.0, kv_efficiency=1.0))
    roofline = serve(plain, workload, limits).ttft_s
    assert 0.06068 < roofline < 0.0650


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
