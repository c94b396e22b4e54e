"""A continuously batched server in steady state (docs/serving.md derives every formula).

A benchmark such as ``vllm bench serve`` keeps C requests in flight (closed loop) or sends
them at a rate (open loop). The server runs one forward pass per step over every running
request: each decoding sequence contributes its next token (k + 1 with speculation) and,
within the chunked-prefill budget, the prompts of newly admitted requests contribute a
chunk. A request lives n prefill steps (its prompt in n chunks; the last yields the first
token) and then (O - 1) / tau decode steps, tau the tokens a step emits per sequence.

Over that life, with R requests running, R / L requests finish per step (L = n + (O-1)/tau
steps each), so every step carries on average R x I / L prompt tokens (C x I / O for a
long answer, as the issue puts it), packed into a share f of the steps. The mean step is
the decode step plus f times what a chunk adds; TPOT and TTFT split a request's life
between them; Little's law (C = request rate x end-to-end latency) ties them to
throughput.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

from decodecalc.answers.cost import CostEnergy, cost_and_energy
from decodecalc.answers.speculative import draft_scenario, drafter
from decodecalc.engine.profile import Engine, roofline
from decodecalc.engine.scheduler import SchedulerLimits
from decodecalc.engine.select import beyond, extrapolation_note, facts_for
from decodecalc.errors import InputError
from decodecalc.notes import Note
from decodecalc.record import field, record, replace
from decodecalc.resolving.resolve import kernel_rated
from decodecalc.scenarios.scenario import Scenario
from decodecalc.scenarios.workload import Workload
from decodecalc.step.flops import pass_flops, step_flops
from decodecalc.step.kv_pool import KvPool, kv_pool
from decodecalc.step.passes import median, mixed_pass_seconds
from decodecalc.step.step import StepModel, expected_for
from decodecalc.units import GB

if TYPE_CHECKING:
    from decodecalc.model.model import Model

_R = TypeVar("_R")


def refuse_past_max_context(model: Model, what: str, tokens: int, hint: str = "") -> None:
    """A length past the model's maximum context is refused (``what`` names it, ``hint``
    says what to do): no server of the model runs such a request, so serving, its pools
    and plan have nothing to price."""
    if tokens > model.max_context_tokens:
        raise InputError(
            f"{what} is past {model.id}'s maximum context of {model.max_context_tokens:,}: "
            f"a server refuses such requests{hint}"
        )


SHARED_PREFIX_ENGINES = frozenset({"vllm"})
"""Engines whose attention reads a prefix the batch shares once per step by default
(vLLM's cascade attention); others read it once per sequence unless told otherwise."""


class Refused(InputError):
    """A server that cannot run the workload at all, whatever the user meant: no room in
    its KV pool for one request (``target`` 'fit'), or requests arriving faster than it
    serves them ('load'). A planner counts it as a missed target, with the figure
    (``value``) and the limit it misses; a user asking about this one server reads the
    message."""

    def __init__(self, message: str, target: str, value: float, limit: float) -> None:
        super().__init__(message)
        self.target, self.value, self.limit = target, value, limit


@record
class ServingResult:
    """The steady state of a server under one workload, per replica (one TP group)."""

    scenario: Scenario
    workload: Workload
    limits: SchedulerLimits
    pool: KvPool
    concurrency: float
    """Requests in the system: the closed loop's C, or rate x e2e in an open loop."""
    running: float
    """Requests the scheduler runs at once (the rest wait)."""
    decode_batch: float
    """Sequences decoding in a step, on average."""
    max_concurrency_kv: float
    """Requests of input + output tokens the KV pool holds at once."""
    limit: str
    """What capped the running requests: concurrency (or request-rate, in an open loop:
    the load itself), max-num-seqs, kv-pool, batched-tokens or prefill."""
    tokens_per_step: float
    """Tokens a decode step emits per sequence: 1, more with speculation."""
    chunk_tokens: int
    """Prompt tokens a step with a prefill chunk carries (the mean chunk)."""
    prefill_chunks: int
    """Steps a request's prompt is spread over."""
    prefill_tokens_per_step: float
    """Averaged over every step."""
    chunk_share: float
    """Share of steps carrying a prefill chunk."""
    decode_step_s: float
    mixed_step_s: float
    """A step with a chunk (draft passes included, with speculation)."""
    tpot_s: float
    itl_s: float
    """The median step: one without a chunk while most steps have none."""
    ttft_s: float
    queue_s: float
    """The part of TTFT before the first chunk: waiting for a running slot, and for the
    step in progress to end (the engine admits requests between steps)."""
    e2e_s: float
    request_throughput_per_s: float
    saturation_rate_per_s: float
    """The request rate the server sustains at its running limit: the knee."""
    utilization: float | None = None
    """Open loop: rate / saturation rate."""
    break_even_batch: int | None = None
    """Speculation: the running requests from which the server without it gives the
    shorter TPOT."""
    shared_prefix_attention: bool = False
    notes: tuple[Note, ...] = ()
    per_request_s: float = 0.0
    """c_req: the engine's per-request cost outside the steps, in TTFT and e2e."""
    costs: CostEnergy | None = None
    """Money and energy per output token at this operating point: the replica's GPUs over
    its output throughput (None: neither a price nor a board power is known)."""
    band: tuple[float, float] = (1.0, 1.0)
    """The engine's band as low / expected and high / expected of the decode step at this
    operating point (step.step.expected: conformal, widened outside the fitted range);
    (1, 1) for the roofline."""

    @property
    def output_throughput_tokens_per_s(self) -> float:
        return self.request_throughput_per_s * self.workload.output_len

    @property
    def tpot_low_s(self) -> float:
        """TPOT is made of steps, each within the step's band: the band's ratios carry over."""
        return self.tpot_s * self.band[0]

    @property
    def tpot_high_s(self) -> float:
        return self.tpot_s * self.band[1]

    @property
    def ttft_low_s(self) -> float:
        """TTFT's steps (queue and chunks) within the band; c_req, outside the steps, as is."""
        return (self.ttft_s - self.per_request_s) * self.band[0] + self.per_request_s

    @property
    def ttft_high_s(self) -> float:
        return (self.ttft_s - self.per_request_s) * self.band[1] + self.per_request_s


@record
class _Steps:
    """What prices one step at a decode batch: the fixed parts of a scenario's step."""

    scenario: Scenario
    workload: Workload
    shared_prefix: bool
    prefill_flops_per_token: float
    draft: Scenario | None
    built: dict[tuple[bool, int], StepModel] = field(default_factory=dict)
    """Step models by (the drafter's or not, batch): a server prices the same few batches
    at every operating point, and building one is most of a step's cost."""

    def seconds(self, batch: float, chunk: int) -> float:
        """A step of ``batch`` decoding sequences (interpolated between whole batches)
        carrying ``chunk`` prompt tokens, with the drafter's passes."""
        low = max(1, math.floor(batch))
        share = batch - low if batch > low else 0.0
        at_low = self._whole(low, chunk)
        return at_low if share == 0 else at_low + share * (self._whole(low + 1, chunk) - at_low)

    def band(self, batch: float) -> tuple[tuple[float, float], tuple[Note, ...]]:
        """The expected decode step's band at a batch (the nearest whole one) and the
        workload's mean decode context, as ratios to the expected step ((1, 1) without an
        engine's expected figure); widened, with a note, where that batch lies outside
        what the engine's parameters were fitted on (engine.select.beyond)."""
        engine = self.scenario.engine
        whole = max(1, round(batch))
        if engine.is_roofline:
            return (1.0, 1.0), ()
        step = self.built.get((False, whole))
        if step is None:
            step = self.built[False, whole] = StepModel.at(self.scenario, whole)
        s = self.scenario
        wide, axes = beyond(engine, facts_for(engine, s.model, whole, s.gpu))
        w = self.workload
        found = expected_for(step, step.row(w.input_len + w.output_len // 2), wide)
        if found.seconds <= 0:
            return (1.0, 1.0), ()
        notes = (extrapolation_note(wide, axes),) if axes else ()
        return (found.low_seconds / found.seconds, found.high_seconds / found.seconds), notes

    def _whole(self, batch: int, chunk: int) -> float:
        spec = self.workload.speculative
        queries = 1 if spec is None else spec.queries
        verify = self._pass(self.scenario, batch, queries, chunk, self.shared_prefix)
        if spec is None or self.draft is None:
            return verify
        return verify + spec.proposed * self._pass(self.draft, batch, 1, 0, False)

    def _pass(
        self, scenario: Scenario, batch: int, queries: int, chunk: int, shared: bool
    ) -> float:
        """One forward pass: ``batch`` sequences of ``queries`` tokens at the workload's
        decode contexts plus a prompt chunk. Weights are streamed once for all its tokens
        (the experts they touch), each sequence's KV once, the chunk's KV written and read
        back; FLOPs are the decode's plus the chunk's at the GPU's peak."""
        w = self.workload
        tokens = batch * queries + chunk
        key = (scenario is self.draft, batch)  # the target's steps, or its drafter's
        step = self.built.get(key)
        if step is None:
            step = self.built[key] = StepModel.at(scenario, batch)
        first, last = w.input_len, w.input_len + w.output_len - 1
        per_sequence = Fraction(step.kv_units.elements(first) + step.kv_units.elements(last), 2)
        shared_units = step.kv_units.elements(w.prefix_len) if shared else 0
        sequences = step.sequences  # whose cache this GPU reads (data-parallel attention: its own)
        sharing = max(0.0, sequences * w.prefix_hit_rate - 1) if shared else 0.0
        units = sequences * per_sequence - Fraction(sharing) * shared_units
        units += 2 * chunk * step.kv_units.elements_per_token
        model = scenario.model
        decode_flops = (
            step_flops(model, batch * queries, first) + step_flops(model, batch * queries, last)
        ) / 2
        return mixed_pass_seconds(
            step, tokens, units, decode_flops, chunk * self.prefill_flops_per_token
        )


def step_prices(scenario: Scenario, workload: Workload) -> _Steps:
    """What prices a server's steps under a workload, with the engine's shared-prefix
    default (a disaggregated decode worker's steps are these without chunks)."""
    spec = workload.speculative
    shared = workload.shared_prefix_attention
    if shared is None:
        shared = scenario.engine.id in SHARED_PREFIX_ENGINES
    return _Steps(
        scenario,
        workload,
        bool(shared and workload.prefix_len),
        prefill_flops_per_token(scenario, workload),
        None if spec is None else draft_scenario(scenario, spec),
    )


def prefill_flops_per_token(scenario: Scenario, workload: Workload) -> float:
    """FLOPs of one computed prompt token, all GPUs: the matmuls and its share of causal
    attention over the whole prompt; a prefix-cache hit skips the prefix's tokens but
    the rest still attend to it. The LM head is multiplied once per request, at the
    prompt's last position (pass_flops): spread here over the prompt's tokens, so the
    chunks that carry a request's prompt add up to it (TTFT is their sum)."""
    model = scenario.model
    matmuls = pass_flops(model, workload.new_tokens, 1)

    def attention(tokens: int) -> int:
        return sum(m.prefill_attention_flops(tokens) for m in model.mixers())

    hit = workload.prefix_hit_rate if workload.prefix_len else 0.0
    whole = attention(workload.input_len)
    flops = matmuls + whole - hit * attention(workload.prefix_len)
    return flops / workload.new_tokens


@record
class _Point:
    """The steady state at R running requests, before queueing is added."""

    running: float
    decode_batch: float
    output_len: int
    chunk: int
    chunks: int
    life_steps: float
    chunk_share: float
    decode_s: float
    mixed_s: float
    limit: str

    @property
    def mean_step_s(self) -> float:
        return self.decode_s + self.chunk_share * (self.mixed_s - self.decode_s)

    @property
    def service_s(self) -> float:
        """A request's time running: L steps of the mean step."""
        return self.life_steps * self.mean_step_s

    @property
    def tpot_s(self) -> float:
        """A request's running time less its n chunk steps, over its O - 1 later tokens."""
        return (self.service_s - self.chunks * self.mixed_s) / (self.output_len - 1)

    @property
    def residual_s(self) -> float:
        """The mean time left of the step in progress when a request arrives at random:
        E[S^2] / (2 E[S]) over steps of t_dec (share 1 - f) and t_mix (share f), the longer
        steps being the likelier to be hit."""
        f = self.chunk_share
        second = (1 - f) * self.decode_s**2 + f * self.mixed_s**2
        return second / (2 * self.mean_step_s)

    @property
    def throughput_per_s(self) -> float:
        return self.running / self.service_s


class _Server:
    """A scenario, workload and scheduler: prices the steady state at any running count."""

    def __init__(self, scenario: Scenario, workload: Workload, limits: SchedulerLimits) -> None:
        self.workload = workload
        self.limits = limits
        spec = workload.speculative
        engine = scenario.engine
        self.steps = step_prices(scenario, workload)
        self.shared = self.steps.shared_prefix
        longest = workload.input_len + workload.output_len
        refuse_past_max_context(scenario.model, f"input + output = {longest:,} tokens", longest)
        self.per_request_s = per_request_seconds(engine)
        self.tau = 1.0 if spec is None else spec.tokens_per_step
        self.queries = 1 if spec is None else spec.queries
        self.pool = kv_pool(scenario, limits, None if spec is None else drafter(scenario, spec))
        self.max_kv = self.pool.max_concurrency(longest)
        pool = self.pool
        if pool.blocks <= 0:
            used = pool.weight_bytes + pool.activation_bytes + pool.reserve_bytes
            raise Refused(_no_pool(pool, limits, scenario), "fit", used, pool.budget_bytes)
        held = pool.held_requests(longest) or 0
        self.held = held
        if held < 1:
            raise Refused(
                f"one request of {longest:,} tokens does not fit in the KV pool of "
                f"{pool.tokens:,} tokens" + (" per attention rank" if pool.ranks > 1 else ""),
                "fit",
                longest,
                pool.tokens,
            )
        # Under data-parallel attention every rank is an engine with its own scheduler
        # (vLLM's DP engine cores; the scheduler defaults here are vLLM's), so both limits
        # hold per rank and the replica runs ranks times them.
        self.ranks = scenario.attention_ranks
        budget_seqs = (limits.max_num_batched_tokens - 1) // self.queries
        if budget_seqs < 1:
            raise InputError(
                f"max-num-batched-tokens {limits.max_num_batched_tokens} leaves no room for a "
                f"prompt token beside a decode step of {self.queries} token"
                + ("s" if self.queries > 1 else "")
            )
        caps = {
            "max-num-seqs": limits.max_num_seqs * self.ranks,
            "kv-pool": held,
            "batched-tokens": budget_seqs * self.ranks,
        }
        self.cap_name, self.cap = min(caps.items(), key=lambda item: item[1])

    def point(self, wanted: int) -> _Point:
        """The steady state with ``wanted`` requests in the system (capped)."""
        w = self.workload
        running, limit = (
            (wanted, "concurrency") if wanted <= self.cap else (self.cap, self.cap_name)
        )
        budget_tokens = self.limits.max_num_batched_tokens * self.ranks
        budget = budget_tokens - running * self.queries
        # A prompt's chunk shares its step with the other running requests' decode tokens,
        # never its own (it is not decoding yet): alone, a prompt of M tokens is one chunk.
        # It runs on one rank, within that rank's budget (its share of the running).
        room = self.limits.max_num_batched_tokens - math.ceil(running / self.ranks) * self.queries
        chunks, per_prompt = prompt_chunks(w.new_tokens, room + self.queries)
        decode_steps = (w.output_len - 1) / self.tau
        life = chunks + decode_steps
        effective: float = float(running)
        demand = running * w.new_tokens / life
        if demand > budget:
            # Prompts arrive faster than the budget prefills them: only E requests run,
            # E I' / L = M - E q (their decode tokens leave the rest of the budget).
            effective = budget_tokens * life / (w.new_tokens + self.queries * life)
            limit, demand = "prefill", budget_tokens - effective * self.queries
        # One prompt's chunk per step while they fit in a share of the steps; past that
        # every step carries the demand, several prompts' chunks together.
        share = min(1.0, demand / per_prompt)
        chunk = math.ceil(max(per_prompt, demand))
        decode_batch = max(1.0, effective * decode_steps / life)
        return _Point(
            running=effective,
            decode_batch=decode_batch,
            output_len=w.output_len,
            chunk=chunk,
            chunks=chunks,
            life_steps=life,
            chunk_share=share,
            decode_s=self.steps.seconds(decode_batch, 0),
            mixed_s=self.steps.seconds(decode_batch, chunk),
            limit=limit,
        )

    def result(
        self, point: _Point, in_system: float, queue_s: float, saturation: float
    ) -> ServingResult:
        """TTFT = queue + n mixed steps + c_req; e2e = TTFT + (O - 1) TPOT = queue + L mean
        steps + c_req; the request rate from Little's law on the whole system."""
        w = self.workload
        band, wider = self.steps.band(point.decode_batch)
        prefill_s = point.chunks * point.mixed_s + self.per_request_s
        e2e = queue_s + point.service_s + self.per_request_s
        even = self.break_even
        scenario = self.steps.scenario
        rates = scenario.rates
        output_per_s = in_system / e2e * w.output_len
        return ServingResult(
            scenario=scenario,
            workload=w,
            limits=self.limits,
            pool=self.pool,
            concurrency=in_system,
            running=point.running,
            decode_batch=point.decode_batch,
            max_concurrency_kv=self.max_kv,
            limit=point.limit,
            tokens_per_step=self.tau,
            chunk_tokens=point.chunk,
            prefill_chunks=point.chunks,
            prefill_tokens_per_step=point.chunk_share * point.chunk,
            chunk_share=point.chunk_share,
            decode_step_s=point.decode_s,
            mixed_step_s=point.mixed_s,
            tpot_s=point.tpot_s,
            itl_s=point.decode_s if point.chunk_share <= 0.5 else point.mixed_s,
            ttft_s=queue_s + prefill_s,
            queue_s=queue_s,
            e2e_s=e2e,
            request_throughput_per_s=in_system / e2e,
            saturation_rate_per_s=saturation,
            break_even_batch=even,
            shared_prefix_attention=self.shared,
            notes=(*self.notes(point, queue_s, even), *wider),
            per_request_s=self.per_request_s,
            band=band,
            costs=None
            if rates.price_per_gpu_hour is None and rates.power_w is None
            else cost_and_energy(
                1.0, output_per_s, scenario.gpus, rates.price_per_gpu_hour, rates.power_w
            ),
        )

    def saturation(self) -> float:
        return self.point(self.cap).throughput_per_s

    @cached_property
    def break_even(self) -> int | None:
        """The smallest running count, up to the most the server runs, from which the same
        server without speculation gives the shorter mean TPOT (None: speculation pays at
        every count it can run). Compared at the operating point, prefill chunks included:
        a decode step alone may stay memory-bound where the chunks beside the verify
        tokens already make the step compute-bound, and there each of the k + 1 query
        tokens costs its full arithmetic. Bisection: the verify pass's compute grows k + 1
        times faster with the count than a plain step's."""
        if self.workload.speculative is None:
            return None
        plain = _Server(self.steps.scenario, replace(self.workload, speculative=None), self.limits)
        top = min(self.cap, plain.cap)

        def loses(running: int) -> bool:
            return self.point(running).tpot_s >= plain.point(running).tpot_s

        if not loses(top):
            return None
        low, high = 0, top
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (low, middle) if loses(middle) else (middle, high)
        return high

    def waiting(self, utilization: float, slots: int, wait_s: float) -> Note:
        """An open loop near saturation: arrivals queue for the running slots."""
        return Note(
            "serving-queued",
            f"at {utilization:.1%} of the saturation rate, arrivals wait for one of {slots:,} "
            f"running slots ({self.cap_name} caps them at {self.cap:,}): a mean "
            f"{wait_s * 1000:,.0f} ms in TTFT (Erlang C)",
        )

    def _pool_holds(self) -> str:
        """What the KV pool caps the running requests at: under data-parallel attention
        whole requests on each rank's own pool (KvPool.held_requests), fewer than the
        pooled blocks' fractional count the header gives."""
        tokens = f"{self.workload.input_len + self.workload.output_len:,} tokens"
        if self.ranks == 1:
            return f"the KV pool holds {self.max_kv:,.1f} requests of {tokens}"
        return (
            f"the KV pools hold {self.held:,} whole requests of {tokens}: "
            f"{self.held // self.ranks:,} on each of {self.ranks} attention ranks"
        )

    def notes(self, point: _Point, queue_s: float, even: int | None) -> tuple[Note, ...]:
        found = []
        engine = self.steps.scenario.engine
        # a named profile (not the roofline, not the typical band) without a serving: block
        if not engine.is_roofline and engine.serving is None and engine.id != "typical":
            found.append(
                Note(
                    "scheduler-stand-in",
                    f"{engine.id}'s profile has no scheduler defaults of its own: vLLM's "
                    "batch limits and KV-pool rules stand in (give --max-num-batched-tokens "
                    "and --max-num-seqs for its own)",
                )
            )
        unmeasured = prefill_unmeasured(self.steps.scenario)
        if unmeasured is not None:
            found.append(unmeasured)
        if point.limit in ("kv-pool", "max-num-seqs", "batched-tokens", "prefill"):
            why = {
                "kv-pool": self._pool_holds(),
                "max-num-seqs": f"max-num-seqs is {self.limits.max_num_seqs:,}"
                + (f" on each of {self.ranks} attention ranks" if self.ranks > 1 else ""),
                "batched-tokens": "max-num-batched-tokens leaves no prefill room for more",
                "prefill": "prompts arrive faster than the chunked-prefill budget computes them",
            }[point.limit]
            found.append(
                Note(
                    "serving-queued",
                    f"{_count(point.running)} requests run at once ({why}); the rest wait, "
                    f"and their wait ({queue_s * 1000:,.0f} ms) is in TTFT",
                )
            )
        spec = self.workload.speculative
        if spec is not None and even is not None and point.running >= even:
            since = (
                ", at every batch: it never pays"
                if even == 1
                else f" (it stops paying from {even:,} running)"
            )
            found.append(
                Note(
                    "speculation-does-not-pay",
                    f"with {requests_running(point.running)} speculation gives a longer TPOT "
                    f"than plain decoding would{since}",
                )
            )
        return tuple(found)


def prefill_unmeasured(scenario: Scenario) -> Note | None:
    """What a profile with no prefill figures (e_p 1 and c_req 0 in every parameter set:
    a profile calibrate fitted on decode steps alone, or one never measured at a first
    token) does to a time to first token: it is the bound, not an engine's. On a GPU whose
    FLOP/s are not known the prompt is priced by its memory traffic alone, so the bound
    leaves the compute out entirely, and the note says so rather than "peak FLOP/s"."""
    engine = scenario.engine
    if engine.is_roofline or any(
        p.prefill_efficiency != 1 or p.per_request_s for p in engine.params
    ):
        return None
    how = (
        "prompts compute at peak FLOP/s"
        if scenario.peak_flops() is not None
        else "prompts cost only their memory traffic (the GPU's FLOP/s are not "
        "known, so their compute is left out entirely)"
    )
    return Note(
        "prefill-unmeasured",
        f"{engine.id} has no prefill measured on {engine.family} GPUs: {how} with no "
        "per-request cost, so times to first token are a lower bound",
    )


def requests_running(count: float) -> str:
    """A running count in words: a closed loop's whole count whole ("16 requests running"),
    an open loop's mean to a tenth ("16.3 requests running"), one in the singular."""
    shown = _count(count)
    return f"{shown} request{'' if shown == '1' else 's'} running"


def _count(count: float) -> str:
    """A closed loop's whole count whole, an open loop's mean to a tenth."""
    return f"{count:,.0f}" if count == round(count) else f"{count:,.1f}"


def per_request_seconds(engine: Engine) -> float:
    """c_req: the engine's per-request cost outside the steps (the profiles' median; 0 for
    the roofline), so in TTFT and e2e only."""
    return 0.0 if engine.is_roofline else median([p.per_request_s for p in engine.params])


def prompt_chunks(tokens: int, room: int) -> tuple[int, float]:
    """A prompt of ``tokens`` computed tokens spread over steps of at most ``room`` prompt
    tokens each: how many steps, and the mean chunk."""
    chunks = math.ceil(tokens / min(tokens, room))
    return chunks, tokens / chunks


def lone_ttft_s(
    scenario: Scenario, workload: Workload, limits: SchedulerLimits, prompts: int = 1
) -> float:
    """Time to first token of ``prompts`` requests sent together to an idle server: their
    prompts in chunks of max-num-batched-tokens, each a step beside a batch of one decode
    sequence, at the engine's prefill efficiency, plus c_req. What serve() gives as TTFT
    at concurrency 1 (prompts 1), without the KV pool's limits: generate's expected
    prefill."""
    rated = kernel_rated(scenario, None)
    steps = step_prices(rated, workload)
    tokens = prompts * workload.new_tokens
    chunks, per_prompt = prompt_chunks(tokens, limits.max_num_batched_tokens)
    return chunks * steps.seconds(1.0, math.ceil(per_prompt)) + per_request_seconds(rated.engine)


def _no_pool(pool: KvPool, limits: SchedulerLimits, scenario: Scenario) -> str:
    """Why a server has no KV cache: what its memory budget went on, per GPU, and what
    shrinks the largest part. The budget is the utilization of the memory CUDA reports,
    as vLLM takes it, less than estimate's (the utilization of the GPU's whole memory):
    the message says so, so that the two figures for one GPU are not read as one."""
    from decodecalc.engine.profile import CUDA_HIDDEN_BYTES
    from decodecalc.units import GIB, MIB

    assert scenario.gpu is not None  # kv_pool refuses a scenario without one
    whole = scenario.gpu.memory_bytes
    reported = (
        f"of the memory CUDA reports ({(whole - CUDA_HIDDEN_BYTES) / GIB:,.2f} GiB: the "
        f"GPU's {whole / GIB:,.2f} GiB less {CUDA_HIDDEN_BYTES // MIB} MiB it never reports)"
    )
    hint = (
        "a smaller max-num-batched-tokens or max-num-seqs shrinks the activation peak"
        if pool.activation_bytes > pool.weight_bytes
        else "try a larger --tp or smaller weights"
    )
    return (
        f"no room for a KV cache: {limits.memory_utilization:g} {reported} is "
        f"{pool.budget_bytes / GB:,.2f} GB, and the weights take {pool.weight_bytes / GB:,.2f} "
        + (
            f"GB ({pool.draft_weight_bytes / GB:,.2f} GB of them the speculative drafter's)"
            if pool.draft_weight_bytes
            else "GB"
        )
        + f", the activation peak {pool.activation_bytes / GB:,.2f} GB and the runtime reserve "
        f"{pool.reserve_bytes / GB:,.2f} GB per GPU ({hint})"
    )


def serve(scenario: Scenario, workload: Workload, limits: SchedulerLimits) -> ServingResult:
    """The steady state of a continuously batched server under a workload."""
    server = _Server(kernel_rated(scenario, None), workload, limits)
    saturation = server.saturation()
    if workload.concurrency is not None:
        return _closed(server, workload.concurrency, saturation)
    return _open(server, workload.request_rate or 0.0, saturation)


@record
class Saturated:
    """A request rate at or past the server's saturation rate: its queue grows without
    bound, so it has no steady state to report; what it would take instead."""

    request_rate_per_s: float
    saturation_rate_per_s: float
    whose: str = "the server's"
    """Whose saturation rate it reaches: the server's, or a disaggregated deployment's pools'
    (naming the pool that saturates first)."""

    @property
    def replicas_needed(self) -> int:
        """Replicas of this server that take the rate between them, each strictly below
        its saturation rate: floor(rate / saturation) + 1."""
        return math.floor(self.request_rate_per_s / self.saturation_rate_per_s) + 1

    def note(self) -> Note:
        return Note(
            "serving-saturated",
            f"request rate {self.request_rate_per_s:g}/s is saturated: it reaches "
            f"{self.whose} saturation rate of {self.saturation_rate_per_s:.3g}/s, so the queue "
            f"grows without bound; it would need {self.replicas_needed} replicas (each "
            f"taking {self.request_rate_per_s / self.replicas_needed:.3g}/s)",
        )


def serve_each(
    scenario: Scenario, workloads: Sequence[Workload], limits: SchedulerLimits
) -> tuple[list[ServingResult], list[Saturated]]:
    """serve() at each workload: the ones the server sustains, and the request rates past
    its saturation, each with what it would need (sustained_each)."""
    return sustained_each(lambda workload: serve(scenario, workload, limits), workloads)


def sustained_each(
    serve_one: Callable[[Workload], _R],
    workloads: Sequence[Workload],
    whose: str = "the server's",
) -> tuple[list[_R], list[Saturated]]:
    """``serve_one`` at each workload: the ones sustained, and the request rates past
    saturation, each a Saturated (``whose``: whose saturation rate, the server's by
    default), so that a rate list sweeps up to the knee in every serving mode. Refused when
    none is sustained (nothing to report), or for any other reason (no room for a
    request)."""
    results: list[_R] = []
    saturated: list[Saturated] = []
    refusal: Refused | None = None
    for workload in workloads:
        try:
            results.append(serve_one(workload))
        except Refused as exc:
            if exc.target != "load" or workload.request_rate is None:
                raise
            refusal = refusal or exc
            saturated.append(Saturated(workload.request_rate, exc.value, whose))
    if not results and refusal is not None:
        raise refusal
    return results, saturated


def prefill_share_s(scenario: Scenario, workload: Workload, limits: SchedulerLimits) -> float:
    """What other requests' prefill chunks add to a closed loop's mean TPOT over the pure
    decode step: TPOT - t_dec = (t_mix - t_dec)(f L - n) / (O - 1) (docs/serving.md), 0 at
    concurrency 1. The chunks, their share of the steps and the decode batch follow from the
    workload and the scheduler limits alone; t_mix - t_dec is priced on the roofline (the
    scenario's own bandwidth efficiency, no engine profile), so the figure does not depend
    on the engine parameters a fit to decode steps is finding. The approximation: a chunk
    whose compute overlaps the decode step's memory time costs only what exceeds it, and
    the roofline's shorter memory time leaves a little less to overlap than an engine's
    (at most the chunk's own compute and bytes: the share is an upper bound)."""
    if workload.concurrency is None:
        raise InputError("the prefill share is for a closed loop: give a concurrency")
    server = _Server(replace(scenario, engine=roofline(scenario.engine.family)), workload, limits)
    point = server.point(workload.concurrency)
    return point.tpot_s - point.decode_s / server.tau


def _closed(server: _Server, concurrency: int, saturation: float) -> ServingResult:
    """C requests in flight. The engine admits a request only between steps, and a closed
    loop sends the next one just after a step ends (the one that emitted the last token),
    while the other C - 1 keep the engine busy: it waits out that whole next step. Each
    slot so cycles through a step's wait and a request's L steps, and the requests past the
    running limit wait their turn: by Little's law, (C / R - 1) such cycles."""
    point = server.point(concurrency)
    admission = point.mean_step_s if concurrency > 1 else 0.0
    cycle = admission + point.service_s
    queue = (concurrency / point.running - 1) * cycle + admission
    return server.result(point, float(concurrency), queue, saturation)


def _open(server: _Server, rate: float, saturation: float) -> ServingResult:
    """Poisson arrivals at ``rate``: the running count N solves N = rate x service(N)
    (interpolated between whole counts), and admission waits as in an M/M/c queue with c
    the running limit (Erlang C)."""
    if rate >= saturation:
        raise Refused(
            f"request rate {rate:g}/s reaches the server's saturation rate of "
            f"{saturation:.3g}/s: the queue grows without bound (try a rate below it)",
            "load",
            saturation,
            rate,
        )
    low, high = 0, server.cap
    while high - low > 1:  # smallest whole N whose throughput reaches the rate
        middle = (low + high) // 2
        low, high = (
            (middle, high) if server.point(middle).throughput_per_s < rate else (low, middle)
        )
    point = server.point(high)
    if high > 1:
        below = server.point(high - 1)
        gained = point.throughput_per_s - below.throughput_per_s
        share = 0.0 if gained <= 0 else (rate - below.throughput_per_s) / gained
        point = _blend(below, point, min(max(share, 0.0), 1.0))
    # Requests running on average, by Little's law on the running part: below one the
    # server idles between requests (its steps, while it runs, are a batch of one's).
    point = replace(point, running=rate * point.service_s)
    # Slots: the running limit, rounded up when prefill caps it at a fraction; the rate
    # is below saturation, so the offered load stays below them.
    servers = math.ceil(server.point(server.cap).running)
    offered = min(rate * point.service_s, servers * (1 - 1e-9))
    for_slot = erlang_c(servers, offered) * point.service_s / (servers - offered)
    # An arrival also waits for the step in progress, if any: below the cap the requests
    # running are Poisson with mean ``offered`` (M/G/infinity), so one or more run with
    # probability 1 - e^-offered (PASTA: arrivals see the time average).
    wait = for_slot - math.expm1(-offered) * point.residual_s
    in_system = rate * (wait + point.service_s + server.per_request_s)
    if point.limit == "concurrency":  # the arrivals, not a cap, set the running count
        point = replace(point, limit="request-rate")
    result = server.result(point, in_system, wait, saturation)
    notes = result.notes
    if for_slot >= point.chunks * point.mixed_s:  # waiting for a slot is most of TTFT
        notes += (server.waiting(rate / saturation, servers, for_slot),)
    return replace(result, utilization=rate / saturation, notes=notes)


def _blend(low: _Point, high: _Point, share: float) -> _Point:
    """A running count between two whole ones: the step times and shares interpolated."""

    def mix(a: float, b: float) -> float:
        return a + share * (b - a)

    return replace(
        high,
        running=mix(low.running, high.running),
        decode_batch=mix(low.decode_batch, high.decode_batch),
        chunk_share=mix(low.chunk_share, high.chunk_share),
        decode_s=mix(low.decode_s, high.decode_s),
        mixed_s=mix(low.mixed_s, high.mixed_s),
    )


def erlang_c(servers: int, offered: float) -> float:
    """The probability an arrival waits in an M/M/c queue with ``offered`` = rate x mean
    service time (< servers): Erlang B by its stable recursion, then C from B."""
    blocking = 1.0
    for k in range(1, servers + 1):
        blocking = offered * blocking / (k + offered * blocking)
    return servers * blocking / (servers - offered * (1 - blocking))
