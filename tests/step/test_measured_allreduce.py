"""Tensor parallelism's all-reduces priced by the engine's own all-reduce as the GPU's kernel
tables measured it (latency and bus bandwidth per TP size), where they hold the group's
size; the fitted latency, else the link's, elsewhere. Figures worked by hand."""

from __future__ import annotations

import pytest

from decodecalc.engine.profile import Engine, EngineParams
from decodecalc.loading.catalog import Catalog
from decodecalc.loading.kernels import kernel_rates, with_kernel_rates
from decodecalc.model.hardware import Link
from decodecalc.model.kernels import AllReduceRates
from decodecalc.step.operations import OPERATION_CLASSES
from decodecalc.step.parallelism import Communication
from decodecalc.step.step import StepModel, engine_step
from tests.conftest import preset_scenario

US = 1e-6
NVLINK = Link("test-link", "test link", 450_000_000_000, 10 * US)
"""450 GB/s a direction, 10 us a call (numbers of the test's own)."""
TABLE = (
    AllReduceRates(gpus=2, latency_s=4 * US, bus_bandwidth_bytes_per_s=200_000_000_000),
    AllReduceRates(gpus=8, latency_s=5 * US, bus_bandwidth_bytes_per_s=250_000_000_000),
)


def _tp(group: int, **kw: object) -> Communication:
    return Communication(
        hidden_size=4096,
        group=group,
        link=NVLINK,
        allreduce_calls=64,
        **kw,  # type: ignore[arg-type]
    )


def test_the_table_prices_plain_tensor_parallelism() -> None:
    comm = _tp(2)
    measured = comm.measured(TABLE)
    assert measured is not None and measured.gpus == 2
    # batch 1: message 1 x 4096 x 2 bytes = 8,192; the link's ring per call
    # 2 x 1/2 x 8,192 / 450e9 = 18.204 ns, 64 calls = 1.16516 us
    split = comm.split(1)
    ring = split.allreduce_s - 64 * 10 * US
    assert ring == pytest.approx(64 * 8_192 / 450e9, rel=1e-12)
    # at the table: 64 x (4 us + 8,192 / 200e9 = 40.96 ns) = 258.62 us
    assert comm.measured_seconds(measured, ring) == pytest.approx(64 * (4e-6 + 40.96e-9), rel=1e-9)


def test_a_size_not_measured_takes_the_next_above_and_none_past_a_node() -> None:
    measured = _tp(4).measured(TABLE)
    assert measured is not None and measured.gpus == 8  # 4 not measured: 8's slower ring
    assert _tp(1).measured(TABLE) is None
    assert _tp(2).measured(()) is None
    # gathers (data-parallel attention) and all-to-all are not what the tables time
    assert _tp(2, gather_calls=2).measured(TABLE) is None
    assert _tp(2, all_to_all_layers=2).measured(TABLE) is None
    # a group past the node runs at the network's latency
    spanning = _tp(16, node_link=NVLINK, gpus_per_node=8)
    assert spanning.measured(TABLE) is None


def test_the_step_pays_the_table_not_the_fitted_latency(catalog: Catalog) -> None:
    """Llama-3.1-8B at TP 2 on H100, batch 1: 32 layers, 64 all-reduces of 8,192 bytes."""
    params = EngineParams(0.8, 0.5, allreduce_latency_s=56 * US)
    s = preset_scenario(
        catalog, "llama-3.1-8b", batch=1, tp=2, link=NVLINK, engine=Engine("test", (params,))
    )
    step = StepModel.of(s)

    def allreduce_s(p: EngineParams) -> float:
        ops = engine_step(step, step.row(1_000), p).operations
        return sum(o.total_s for o in ops if o.group == OPERATION_CLASSES[4])

    # the fitted latency: 64 x (56 us + 18.204 ns) = 3,585.165 us
    assert allreduce_s(params) == pytest.approx(64 * (56e-6 + 8_192 / 450e9), rel=1e-9)
    # the table's TP 2: 64 x (4 us + 40.96 ns) = 258.621 us
    tabled = EngineParams(0.8, 0.5, allreduce_latency_s=56 * US, allreduce_rates=TABLE)
    assert allreduce_s(tabled) == pytest.approx(64 * (4e-6 + 40.96e-9), rel=1e-9)


def test_a_tensor_parallel_query_reads_the_tables_at_any_batch(catalog: Catalog) -> None:
    """A dense model at batch 1 reads no GEMM table (it cannot be compute-bound), but at
    TP 2 the all-reduce's: vLLM's on H100 (presets/kernels/h100-sxm.yaml, vLLM 0.24.0)."""
    vllm = kernel_rates("h100-sxm", "vllm")
    assert vllm is not None and vllm.allreduce
    engine = Engine("vllm", (EngineParams(0.8, 0.5, allreduce_latency_s=56 * US),))
    gpu, bf16 = catalog.gpu("h100-sxm"), catalog.dtype("bf16")
    alone = with_kernel_rates(engine, gpu, bf16, None, 1, tp=1)
    assert alone.params[0].allreduce_rates == ()
    paired = with_kernel_rates(engine, gpu, bf16, None, 1, tp=2)
    assert paired.params[0].allreduce_rates == vllm.allreduce
    assert paired.params[0].allreduce_latency_s == 56 * US  # kept for what no table prices


def test_a_prefill_sized_message_goes_to_the_link() -> None:
    """vLLM's custom all-reduce takes messages up to 8 MiB; 2,048 tokens x 4,096 x 2 bytes
    = 16 MiB goes to NCCL's ring over the link: 64 x (10 us + 2 x 1/2 x 16,777,216 /
    450e9 = 37.28 us) = 3.0686 ms, not the table's 64 x (4 us + 16,777,216 / 200e9)."""
    comm = _tp(2)
    measured = comm.measured(TABLE)
    assert measured is not None
    split = comm.split(2048)
    ring = split.allreduce_s - 64 * 10 * US
    assert comm.measured_seconds(measured, ring) == pytest.approx(
        64 * (10e-6 + 16_777_216 / 450e9), rel=1e-9
    )
    # 1,024 tokens, 8 MiB exactly, still the table's
    ring = comm.split(1024).allreduce_s - 64 * 10 * US
    assert comm.measured_seconds(measured, ring) == pytest.approx(
        64 * (4e-6 + 8_388_608 / 200e9), rel=1e-9
    )


def test_a_link_of_the_users_own_leaves_the_tables_out(catalog: Catalog) -> None:
    """The tables timed vLLM's all-reduce over the H100's own NVLink; a scenario that names
    another link or bandwidth prices its all-reduces over that link, not at the tables'."""
    from decodecalc.resolving.resolve import kernel_rated, resolve
    from decodecalc.scenarios.spec import ScenarioSpec

    def rates(**link: str) -> tuple[AllReduceRates, ...]:
        spec = ScenarioSpec(model="llama-3.1-8b", gpu="h100-sxm", engine="vllm", tp=2, **link)
        (params,) = kernel_rated(resolve(spec, catalog), 1).engine.params
        return params.allreduce_rates

    assert rates()  # the GPU's own link: the tables'
    assert rates(link_bandwidth="100GB/s") == () and rates(link="pcie5") == ()
