"""Expert parallelism's busiest GPU (docs/physics.md, "Expert parallelism"): the expected
maximum over GPUs of the experts each reads, its approximation against exact enumeration
and simulated routing, and what --ep and --eplb-redundant then change in a step."""

from __future__ import annotations

import itertools
import json
import math
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decodecalc.model.tensors import expected_experts
from decodecalc.step.expert_balance import busiest_slots, mean_slots
from tests.conftest import Run


def exact_busiest(experts: int, per_token: int, tokens: int, gpus: int) -> float:
    """E[max over GPUs of the distinct experts touched], by enumerating every routing."""
    per_gpu = experts // gpus
    choices = list(itertools.combinations(range(experts), per_token))
    total = 0
    for routing in itertools.product(choices, repeat=tokens):
        touched: set[int] = set().union(*routing)
        total += max(sum(1 for e in touched if e // per_gpu == g) for g in range(gpus))
    return float(total / len(choices) ** tokens)


def simulated_busiest(experts: int, per_token: int, tokens: int, gpus: int) -> float:
    rng = random.Random(7)
    per_gpu, trials, total = experts // gpus, 4000, 0
    for _ in range(trials):
        touched: set[int] = set()
        for _ in range(tokens):
            touched.update(rng.sample(range(experts), per_token))
        total += max(Counter(e // per_gpu for e in touched).values())  # the busiest GPU's
    return total / trials


@pytest.mark.parametrize(
    ("experts", "per_token", "tokens", "gpus"),
    [(8, 2, 2, 2), (8, 2, 3, 4), (6, 1, 4, 3), (8, 1, 3, 2)],
)
def test_the_approximation_is_within_5_percent_under_exact_enumeration(
    experts: int, per_token: int, tokens: int, gpus: int
) -> None:
    """Tiny groups (2 or 3 experts a GPU), where the neglected correlation weighs most:
    1 to 4.2% under (8 experts, 2 per token, 3 tokens, 4 GPUs: 1.803 for 1.881)."""
    exact = exact_busiest(experts, per_token, tokens, gpus)
    approx = busiest_slots(experts, per_token, tokens, gpus)
    assert exact * 0.95 <= approx <= exact


@pytest.mark.parametrize(("tokens"), [1, 16, 64])
def test_deepseek_v3_over_8_gpus_matches_simulated_routing(tokens: int) -> None:
    """256 experts, 8 per token, 8 GPUs: the simulation's standard error is about 0.02."""
    simulated = simulated_busiest(256, 8, tokens, 8)
    assert busiest_slots(256, 8, tokens, 8) == pytest.approx(simulated, rel=0.02)


def test_deepseek_v3_worked_by_hand() -> None:
    """docs/physics.md: at batch 1 each of a GPU's 32 experts is touched with p = 8/256, so
    E[max] = sum over j of (1 - P(Bin(32, p) <= j)^8) = 1.000 + 0.914 + 0.475 + ... = 2.54;
    the mean GPU reads 1."""
    p = 8 / 256
    cdf = [
        sum(math.comb(32, i) * p**i * (1 - p) ** (32 - i) for i in range(j + 1)) for j in range(32)
    ]
    assert cdf[0] == pytest.approx((31 / 32) ** 32)
    assert busiest_slots(256, 8, 1, 8) == pytest.approx(sum(1 - c**8 for c in cdf), rel=1e-12)
    assert busiest_slots(256, 8, 1, 8) == pytest.approx(2.544, abs=0.001)
    assert mean_slots(256, 8, 1, 8) == pytest.approx(1.0)


moe_shapes = st.tuples(
    st.sampled_from([8, 16, 32, 64, 128, 256]),
    st.integers(1, 8),
    st.integers(1, 600),
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([0, 8, 16, 32]),
)


@given(moe_shapes)
@settings(max_examples=120, deadline=None)
def test_busiest_gpu_reads_at_least_the_mean(shape: tuple[int, int, int, int, int]) -> None:
    experts, per_token, tokens, gpus, redundant = shape
    per_token = min(per_token, experts)
    busiest = busiest_slots(experts, per_token, tokens, gpus, redundant)
    mean = mean_slots(experts, per_token, tokens, gpus, redundant)
    balanced = float(expected_experts(experts, per_token, tokens)) / gpus
    assert busiest >= mean - 1e-9
    assert mean >= balanced - 1e-9  # a replica is touched at least half as often
    assert busiest <= math.ceil((experts + redundant) / gpus) + 1e-9


@given(moe_shapes)
@settings(max_examples=60, deadline=None)
def test_equal_once_every_expert_is_touched_on_every_gpu(
    shape: tuple[int, int, int, int, int],
) -> None:
    """A batch so large every replica is touched: every GPU reads all it holds."""
    experts, per_token, _, gpus, redundant = shape
    tokens = 100_000
    held = (experts + redundant) / gpus
    assert busiest_slots(experts, per_token, tokens, gpus, redundant) == pytest.approx(held)
    assert mean_slots(experts, per_token, tokens, gpus, redundant) == pytest.approx(held)


@given(moe_shapes)
@settings(max_examples=60, deadline=None)
def test_total_reads_over_all_gpus_are_those_of_tensor_parallelism(
    shape: tuple[int, int, int, int, int],
) -> None:
    """EP moves experts, not bytes: N GPUs' mean reads add up to the experts touched, what
    TP's N slices of every touched expert add up to."""
    experts, per_token, tokens, gpus, _ = shape
    per_token = min(per_token, experts)
    total = mean_slots(experts, per_token, tokens, gpus) * gpus
    assert total == pytest.approx(float(expected_experts(experts, per_token, tokens)))


def test_one_gpu_is_its_own_busiest() -> None:
    assert busiest_slots(64, 6, 5, 1) == pytest.approx(float(expected_experts(64, 6, 5)))


def estimate_row(cli: Run, *args: str) -> dict[str, float]:
    result = cli("estimate", "-m", "deepseek-v3", "-g", "h200", "--tp", "8", *args, "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    return {**doc["rows"][0], **{k: v for k, v in doc.items() if k.startswith("experts_")}}


def test_ep_streams_the_busiest_gpus_experts(cli: Run) -> None:
    """DeepSeek-V3 on 8 H200s at batch 64: TP reads 1/8 of the 27.81 experts touched per
    layer; EP's busiest GPU 30.30 whole experts of 32, so EP streams more expert bytes."""
    tp = estimate_row(cli, "--batch", "64")
    ep = estimate_row(cli, "--batch", "64", "--ep")
    assert ep["experts_touched_per_gpu"] == pytest.approx(256 * (1 - (31 / 32) ** 64) / 8)
    assert ep["experts_read_busiest_gpu"] == pytest.approx(30.30, abs=0.01)
    assert ep["weight_bytes"] > tp["weight_bytes"]
    assert ep["ms_per_token"] > tp["ms_per_token"]
    # 58 MoE layers, 256 x 3 x 7,168 x 2,048 FP8 parameters each (1.0002 bytes with
    # 128 x 128 block scales): the difference is the busiest GPU's extra experts.
    expert = 3 * 7_168 * 2_048
    extra = 58 * expert * (30.30 - 256 * (1 - (31 / 32) ** 64) / 8)
    assert ep["weight_bytes"] - tp["weight_bytes"] == pytest.approx(extra, rel=0.01)


def test_ep_equals_tp_once_every_expert_is_touched(cli: Run) -> None:
    tp = estimate_row(cli, "--batch", "1024")
    ep = estimate_row(cli, "--batch", "1024", "--ep")
    assert ep["weight_bytes"] == pytest.approx(tp["weight_bytes"], rel=1e-9)


def test_redundant_experts_are_held_and_read(cli: Run) -> None:
    """32 redundant of 256 over 8 GPUs: 36 replicas per GPU; at batch 1024 all are read."""
    plain = estimate_row(cli, "--batch", "1024", "--ep")
    eplb = estimate_row(cli, "--batch", "1024", "--ep", "--eplb-redundant", "32")
    expert = 3 * 7_168 * 2_048
    assert eplb["weight_bytes"] - plain["weight_bytes"] == pytest.approx(58 * 4 * expert, rel=0.01)


def test_ep_under_tensor_parallel_attention_combines_with_the_all_reduce(cli: Run) -> None:
    """--tp 8 --ep without DP attention: every GPU holds every token after attention, runs
    its own experts on them and one all-reduce sums the answers, as the engines do by
    default (vLLM: use_all2all_kernels needs data-parallel size > 1; SGLang: the MoE block
    runs in FULL mode unless its moe-a2a-backend names a dispatcher; docs/physics.md cites
    both): the same transfers as tensor-parallel experts, no all-to-all."""
    tp = estimate_row(cli, "--batch", "64")
    ep = estimate_row(cli, "--batch", "64", "--ep")
    assert ep["all_to_all_ms"] == tp["all_to_all_ms"] == 0
    assert ep["allreduce_ms"] == pytest.approx(tp["allreduce_ms"])
    assert ep["comm_ms"] == pytest.approx(tp["comm_ms"])


def test_data_parallel_attention_with_ep_pays_the_all_to_all(cli: Run) -> None:
    row = estimate_row(cli, "--batch", "64", "--ep", "--dp-attention")
    assert row["all_to_all_ms"] > 0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--eplb-redundant", "32"), "give --ep too"),
        (("--ep", "--eplb-redundant", "30"), "256 + 30 redundant experts do not divide"),
    ],
)
def test_bad_redundancy_is_one_line(cli: Run, args: tuple[str, ...], words: str) -> None:
    result = cli("estimate", "-m", "deepseek-v3", "-g", "h200", "--tp", "8", *args)
    assert result.code == 2
    assert words in result.err
    assert len(result.err.strip().splitlines()) == 1
