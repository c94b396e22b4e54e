"""Disaggregated serving: prefill workers and decode workers on separate GPUs, each
request's prompt KV handed from one to the other (docs/serving.md, "Disaggregated
serving"; NVIDIA Dynamo, SGLang's prefill-decode disaggregation, llm-d, vLLM's NIXL
connector).

A request waits for a prefill worker, has its prompt computed there (in chunks of the
worker's batched-token budget, nothing else in the passes), its prompt's KV sent over the
link between the pools, and then decodes on a decode worker whose steps carry no prefill:

    TTFT = prefill wait + prefill + KV hand-over + the first decode step (+ c_req)
    TPOT = the decode worker's step at its share of the decoding requests / tau

The pools are two stations of one loop. The prefill pool is P servers, each computing one
prompt at a time (a prompt is compute-bound: packing several into a pass saves little), or
under data-parallel attention P x N (each of a worker's N ranks its own prompt, the N
sharing each pass), its wait that of an M/M/c queue (Erlang C) at the offered load; the
decode pool holds every decoding request, D workers sharing them evenly. A closed loop of
C requests settles where C = X x e2e(X) (Little's law), an open loop at X = the request
rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from decodecalc.answers.cost import CostEnergy, cost_and_energy
from decodecalc.answers.serving import (
    Refused,
    Saturated,
    erlang_c,
    per_request_seconds,
    refuse_past_max_context,
    step_prices,
    sustained_each,
)
from decodecalc.answers.speculative import drafter
from decodecalc.notes import Note
from decodecalc.record import record, replace
from decodecalc.scenarios.workload import WORKLOAD_FIELD, Workload
from decodecalc.step.kv_pool import KvPool, kv_pool
from decodecalc.step.parallelism import handover_seconds
from decodecalc.step.passes import mixed_pass_seconds
from decodecalc.step.step import StepModel

if TYPE_CHECKING:
    from decodecalc.answers.serving import _Steps
    from decodecalc.engine.scheduler import SchedulerLimits
    from decodecalc.model.hardware import Link
    from decodecalc.scenarios.scenario import Scenario


@record
class Pools:
    """A disaggregated deployment: how many workers of each kind, and each one's layout."""

    prefill: Scenario
    decode: Scenario
    prefill_workers: int
    decode_workers: int
    kv_link: Link | None
    """What carries the prompt's KV between the pools (None: free, the same GPUs)."""

    def __post_init__(self) -> None:
        for name in ("prefill_workers", "decode_workers"):
            WORKLOAD_FIELD[name].check(getattr(self, name))

    @property
    def prefill_gpus(self) -> int:
        return self.prefill_workers * self.prefill.gpus

    @property
    def decode_gpus(self) -> int:
        return self.decode_workers * self.decode.gpus

    @property
    def gpus(self) -> int:
        return self.prefill_gpus + self.decode_gpus


@record
class DisaggregatedResult:
    """The steady state of the two pools under one workload."""

    pools: Pools
    workload: Workload
    limits: SchedulerLimits
    decode_pool: KvPool
    """Each decode worker's KV pool."""
    concurrency: float
    """Requests in the system: the closed loop's C, or rate x e2e in an open loop."""
    decoding: float
    """Requests decoding, over all decode workers."""
    decode_batch: float
    """Requests one decode worker runs at once."""
    max_concurrency_kv: float
    """Requests of input + output tokens one decode worker's KV pool holds."""
    kv_bytes_per_request: int
    """The prompt's KV cache, one copy over all layers: what the prefill pool computes."""
    kv_bytes_per_gpu: int
    """What each decode GPU receives of it (its TP share, or all of it for MLA, whose
    latent every TP rank holds, or under data-parallel attention, one rank holding it)."""
    kv_transfer_s: float
    prefill_s: float
    """One prompt's prefill on an idle prefill worker."""
    prefill_wait_s: float
    decode_wait_s: float
    """Waiting for a decode slot, where the decode pool is full."""
    first_step_s: float
    decode_step_s: float
    tpot_s: float
    ttft_s: float
    e2e_s: float
    request_throughput_per_s: float
    prefill_saturation_per_s: float
    """Requests per second the prefill pool computes, every worker busy."""
    decode_saturation_per_s: float
    """Requests per second the decode pool finishes, every worker at its running limit."""
    balanced_prefill_per_decode: float
    """Prefill workers per decode worker that make the two saturate together."""
    per_request_s: float = 0.0
    band: tuple[float, float] = (1.0, 1.0)
    utilization: float | None = None
    costs: CostEnergy | None = None
    notes: tuple[Note, ...] = ()

    @property
    def output_throughput_tokens_per_s(self) -> float:
        return self.request_throughput_per_s * self.workload.output_len

    @property
    def output_per_gpu(self) -> float:
        return self.output_throughput_tokens_per_s / self.pools.gpus

    @property
    def output_per_decode_gpu(self) -> float:
        return self.output_throughput_tokens_per_s / self.pools.decode_gpus

    @property
    def input_per_prefill_gpu(self) -> float:
        per_s = self.request_throughput_per_s * self.workload.input_len
        return per_s / self.pools.prefill_gpus

    @property
    def saturation_rate_per_s(self) -> float:
        """The deployment's saturation rate: the lower of its pools' (the one-pool
        server's figure of the same name)."""
        return min(self.prefill_saturation_per_s, self.decode_saturation_per_s)

    @property
    def saturates(self) -> str:
        """The pool that saturates first as the load grows."""
        prefill, decode = self.prefill_saturation_per_s, self.decode_saturation_per_s
        return "prefill" if prefill <= decode else "decode"

    @property
    def tpot_band_s(self) -> tuple[float, float]:
        """TPOT is one decode step over tau: the step's band carries over."""
        return (self.tpot_s * self.band[0], self.tpot_s * self.band[1])

    @property
    def ttft_band_s(self) -> tuple[float, float]:
        """The steps of TTFT (the waits, the prefill, the first step) within the band; the
        hand-over and c_req, outside the engine's steps, as they are."""
        fixed = self.kv_transfer_s + self.per_request_s
        steps = self.ttft_s - fixed
        return (steps * self.band[0] + fixed, steps * self.band[1] + fixed)


def prompt_kv_bytes(decode: Scenario, prompt: int) -> tuple[int, int]:
    """The prompt's KV: one copy over all layers, and what each decode GPU holds of it."""
    whole = replace(decode, tp=1, pp=1, ep=False, dp_attention=False, eplb_redundant=0)
    one = StepModel.at(whole, 1).kv_bytes(prompt, held=True)
    per_gpu = StepModel.at(decode, 1).kv_bytes(prompt, held=True)
    return one, per_gpu


def prefill_ranks(prefill: Scenario) -> int:
    """Prompts a prefill worker computes side by side: one per attention rank under
    data-parallel attention (each rank takes its own requests, SGLang's and vLLM's DP
    ranks), else one (the TP group computes one prompt at a time)."""
    return prefill.tp if prefill.dp_attention else 1


def prefill_seconds(prefill: Scenario, workload: Workload, budget: int) -> float:
    """A prompt on a prefill worker (beside one on each other attention rank, under
    data-parallel attention): its computed tokens in ceil(I' / M) equal chunks, each a pass
    over every rank's chunk that writes and reads back its KV and computes its FLOPs (at
    the engine's prefill efficiency), with no decoding sequence beside it. The ranks'
    chunks share the pass's weight reads and travel together in its all-to-all."""
    from decodecalc.answers.serving import prefill_flops_per_token

    tokens = workload.new_tokens
    chunks = math.ceil(tokens / budget)
    chunk = math.ceil(tokens / chunks)
    ranks = prefill_ranks(prefill)
    step = StepModel.at(prefill, ranks)
    units = Fraction(2 * chunk * step.kv_units.elements_per_token)
    flops = ranks * chunk * prefill_flops_per_token(prefill, workload)
    return chunks * mixed_pass_seconds(step, ranks * chunk, units, 0.0, flops)


class _Deployment:
    """The pools under one workload: prices their parts once, then any load."""

    def __init__(
        self,
        pools: Pools,
        workload: Workload,
        limits: SchedulerLimits,
        steps: _Steps | None = None,
    ) -> None:
        self.pools, self.workload, self.limits = pools, workload, limits
        d = pools.decode
        longest = workload.input_len + workload.output_len
        refuse_past_max_context(d.model, f"input + output = {longest:,} tokens", longest)
        spec = workload.speculative  # the decode workers run the drafter
        self.pool = kv_pool(d, limits, None if spec is None else drafter(d, spec))
        self.max_kv = self.pool.max_concurrency(longest)
        whole = self.pool.held_requests(longest) or 0
        if not whole:  # a whole request on a rank
            raise Refused(
                f"a decode worker ({d.gpus} x {_gpu(d)}, TP {d.tp}) cannot hold the model and "
                f"one request of {longest:,} tokens",
                "fit",
                longest,
                self.pool.tokens,
            )
        p = pools.prefill
        held = kv_pool(p, limits)
        if held.blocks <= 0 or held.max_concurrency(workload.input_len) < 1:
            raise Refused(
                f"a prefill worker ({p.gpus} x {_gpu(p)}, TP {p.tp}) cannot hold the model and "
                f"one prompt of {workload.input_len:,} tokens",
                "fit",
                workload.input_len,
                held.tokens,
            )
        self.tau = 1.0 if spec is None else spec.tokens_per_step
        queries = 1 if spec is None else spec.queries
        # Both scheduler limits hold per data-parallel attention rank (each its own engine).
        ranks = d.attention_ranks
        self.cap = min(
            limits.max_num_seqs * ranks, whole, limits.max_num_batched_tokens // queries * ranks
        )
        self.closed_within = workload.concurrency
        """A closed loop's requests (None: an open loop)."""
        self.steps = step_prices(d, workload) if steps is None else steps
        self._priced: dict[int, float] = {}
        self.prefill_s = prefill_seconds(p, workload, limits.max_num_batched_tokens)
        self.kv_bytes, self.kv_per_gpu = prompt_kv_bytes(d, workload.input_len)
        self.transfer_s = handover_seconds(pools.kv_link, self.kv_per_gpu)
        engine = d.engine
        self.per_request_s = per_request_seconds(engine)
        self.decode_steps = 1 + (workload.output_len - 1) / self.tau
        """Steps a request spends on a decode worker: the first token's, then the rest."""

    def step_s(self, batch: float) -> float:
        """A decode step of ``batch`` sequences (at least one), no chunk: interpolated
        between whole batches as the aggregated server's are, each priced once."""
        batch = max(1.0, batch)
        low = math.floor(batch)
        at_low = self._whole(low)
        return at_low if batch == low else at_low + (batch - low) * (self._whole(low + 1) - at_low)

    def _whole(self, batch: int) -> float:
        known = self._priced.get(batch)
        if known is None:
            known = self._priced[batch] = self.steps.seconds(batch, 0)
        return known

    def residence_s(self, batch: float) -> float:
        return self.decode_steps * self.step_s(batch)

    @property
    def prefill_servers(self) -> int:
        """Prompts the prefill pool computes at once: a worker's ranks (prefill_ranks)."""
        return self.pools.prefill_workers * prefill_ranks(self.pools.prefill)

    @property
    def prefill_capacity(self) -> float:
        return self.prefill_servers / self.prefill_s

    @property
    def decode_capacity(self) -> float:
        return self.pools.decode_workers * self.cap / self.residence_s(self.cap)

    def decoding(self, rate: float) -> float:
        """Requests decoding at a request rate: N = rate x residence(N / D), by bisection
        (the residence grows with the batch); the pool's limit where the rate exceeds it."""
        workers = self.pools.decode_workers
        low, high = 0.0, float(workers * self.cap)
        if rate * self.residence_s(self.cap) >= high:
            return high
        for _ in range(50):
            middle = (low + high) / 2
            if middle < rate * self.residence_s(middle / workers):
                low = middle
            else:
                high = middle
        return high

    def prefill_wait_s(self, rate: float) -> float:
        """Erlang C over the prefill pool's servers (P workers x their ranks) at the
        offered load rate x prefill; none in a closed loop of no more requests than servers
        (one is always free)."""
        servers = self.prefill_servers
        if self.closed_within is not None and self.closed_within <= servers:
            return 0.0
        offered = min(rate * self.prefill_s, servers * (1 - 1e-9))
        return erlang_c(servers, offered) * self.prefill_s / (servers - offered)

    def e2e_s(self, rate: float) -> float:
        decoding = self.decoding(rate)
        return (
            self.prefill_wait_s(rate)
            + self.prefill_s
            + self.transfer_s
            + self.residence_s(decoding / self.pools.decode_workers)
            + self.per_request_s
        )

    def at_rate(self, rate: float, in_system: float | None = None) -> DisaggregatedResult:
        """The figures at a request rate; ``in_system``: a closed loop's C, whose requests
        past what the pools hold at that rate wait for the saturated pool."""
        pools, w = self.pools, self.workload
        decoding = self.decoding(rate)
        batch = decoding / pools.decode_workers
        prefill_wait = self.prefill_wait_s(rate)
        e2e = self.e2e_s(rate)
        decode_wait = 0.0
        if in_system is not None and in_system > rate * e2e:
            extra = in_system / rate - e2e
            if self.first_to_saturate == "prefill":
                prefill_wait += extra
            else:
                decode_wait = extra
            e2e += extra
        step = self.step_s(batch)
        ttft = prefill_wait + self.prefill_s + self.transfer_s + decode_wait + step
        band, wider = self.steps.band(batch)
        rates = pools.decode.rates
        output_per_s = rate * w.output_len
        prefill_rate = prefill_ranks(pools.prefill) / self.prefill_s
        decode_rate = self.cap / self.residence_s(self.cap)
        return DisaggregatedResult(
            pools=pools,
            workload=w,
            limits=self.limits,
            decode_pool=self.pool,
            concurrency=rate * e2e if in_system is None else in_system,
            decoding=decoding,
            decode_batch=batch,
            max_concurrency_kv=self.max_kv,
            kv_bytes_per_request=self.kv_bytes,
            kv_bytes_per_gpu=self.kv_per_gpu,
            kv_transfer_s=self.transfer_s,
            prefill_s=self.prefill_s,
            prefill_wait_s=prefill_wait,
            decode_wait_s=decode_wait,
            first_step_s=step,
            decode_step_s=step,
            tpot_s=step / self.tau,
            ttft_s=ttft + self.per_request_s,
            e2e_s=e2e,
            request_throughput_per_s=rate,
            prefill_saturation_per_s=self.prefill_capacity,
            decode_saturation_per_s=self.decode_capacity,
            balanced_prefill_per_decode=decode_rate / prefill_rate,
            per_request_s=self.per_request_s,
            band=band,
            costs=None
            if rates.price_per_gpu_hour is None and rates.power_w is None
            else cost_and_energy(
                1.0, output_per_s, pools.gpus, rates.price_per_gpu_hour, rates.power_w
            ),
            notes=(*self.notes(), *(decode_pool(n) for n in wider)),
        )

    def notes(self) -> tuple[Note, ...]:
        """What the hand-over's timing leaves out; nothing where it costs nothing (--kv-link
        none: the same GPUs, or a transfer the user prices at zero)."""
        if self.transfer_s <= 0:
            return ()
        layers = len(self.pools.decode.model.layers)
        hidden = self.transfer_s * (1 - 1 / layers)
        return (
            Note(
                "kv-transfer-after-prefill",
                f"the prompt's KV ({self.kv_per_gpu / 1e6:,.1f} MB per decode GPU) is handed "
                f"over after its prefill ends ({self.transfer_s * 1000:,.2f} ms): an engine "
                f"that sends it layer by layer as the prefill runs hides up to "
                f"{hidden * 1000:,.2f} ms of it",
            ),
        )

    @property
    def saturation(self) -> float:
        return min(self.prefill_capacity, self.decode_capacity)

    @property
    def first_to_saturate(self) -> str:
        return "prefill" if self.prefill_capacity <= self.decode_capacity else "decode"


def decode_pool(note: Note) -> Note:
    """A note of the decode workers' steps (their engine's fitted range at their batch),
    said of the decode pool: the prefill pool runs the same engine at other batches."""
    return replace(note, message=f"decode pool: {note.message}", pool="decode")


def _gpu(s: Scenario) -> str:
    return s.gpu.name if s.gpu is not None else "GPUs"


def serve_disaggregated(
    pools: Pools, workload: Workload, limits: SchedulerLimits, steps: _Steps | None = None
) -> DisaggregatedResult:
    """The steady state of the two pools under a closed loop or an open loop. ``steps``:
    the decode workers' step prices (step_prices of pools.decode under the workload), where
    the caller tries several splits of the same decode layout and prices its steps once."""
    deployment = _Deployment(pools, workload, limits, steps)
    top = deployment.saturation
    if workload.request_rate is not None:
        rate = workload.request_rate
        if rate >= top:
            first = deployment.first_to_saturate
            raise Refused(
                f"request rate {rate:g}/s reaches the pools' saturation rate of {top:.3g}/s "
                f"(the {first} pool's): the queue grows without bound",
                "load",
                top,
                rate,
            )
        return replace(deployment.at_rate(rate), utilization=rate / top)
    concurrency = workload.concurrency or 1
    # C = X x e2e(X) is increasing in X: bisect below the saturation rate.
    low, high = 0.0, top * (1 - 1e-6)
    if high * deployment.e2e_s(high) <= concurrency:
        return deployment.at_rate(high, float(concurrency))
    for _ in range(50):
        middle = (low + high) / 2
        if middle * deployment.e2e_s(middle) < concurrency:
            low = middle
        else:
            high = middle
    return deployment.at_rate(high, float(concurrency))


def serve_disaggregated_each(
    pools: Pools, workloads: Sequence[Workload], limits: SchedulerLimits
) -> tuple[list[DisaggregatedResult], list[Saturated]]:
    """serve_disaggregated at each workload: the ones the pools sustain, and the request
    rates past their saturation, each with what it would need, as the one-pool server
    reports a rate list (answers/serving.py sustained_each)."""
    return sustained_each(
        lambda workload: serve_disaggregated(pools, workload, limits), workloads, "the pools'"
    )


@record
class PoolRates:
    """Each pool saturated on its own, as a benchmark that isolates one pool measures it
    (the other given all it needs): the decode workers at a batch each, the prefill
    workers with every server busy."""

    decode_batch: float
    """Requests one decode worker runs at once."""
    decode_step_s: float
    tpot_s: float
    output_per_decode_gpu: float
    """Output tokens per second per decode GPU at that batch."""
    prefill_s: float
    input_per_prefill_gpu: float
    """Prompt tokens per second per prefill GPU, every prefill server busy."""


def pool_rates(
    pools: Pools, workload: Workload, limits: SchedulerLimits, decode_batch: float
) -> PoolRates:
    """The two pools' own rates: a decode step of ``decode_batch`` requests (no prefill
    mixed in, no cap on the batch but what the KV pool holds) and the prefill pool's
    saturation (answers the same _Deployment prices)."""
    deployment = _Deployment(pools, workload, limits)
    if decode_batch > deployment.max_kv:
        d = pools.decode
        raise Refused(
            f"a decode worker ({d.gpus} x {_gpu(d)}) holds {deployment.max_kv:,.0f} requests of "
            f"{workload.input_len + workload.output_len:,} tokens, not {decode_batch:,.0f}",
            "fit",
            decode_batch,
            deployment.max_kv,
        )
    step = deployment.step_s(decode_batch)
    p = pools.prefill
    return PoolRates(
        decode_batch=decode_batch,
        decode_step_s=step,
        tpot_s=step / deployment.tau,
        output_per_decode_gpu=decode_batch * deployment.tau / step / pools.decode.gpus,
        prefill_s=deployment.prefill_s,
        input_per_prefill_gpu=prefill_ranks(p) * workload.input_len / deployment.prefill_s / p.gpus,
    )
