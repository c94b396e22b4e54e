"""The one table of serving fields, beside the scenario's (scenarios/fields.py): what a
server is asked to carry (the workload: its loads, request sizes, shared prefix and
speculation), its scheduler limits and its disaggregated pools, each with how the command
line and deployment files spell it, its type, unit, limits, default and help; and the
Workload and Speculation records, validated from the table's limits.

Every door reads its serving fields from here: serving and plan declare one option per row
(cli/options.py workload_options), a deployment file accepts each row's key path
(checks/deployments.py and checks/workloads.py, with a did-you-mean from the table) and
reads it by its kind, and the JSON Schema `decodecalc schema` prints types each key by its
kind and bounds it by the row's limits (checks/schema.py), which are the limits the records
below refuse past, so schema and code cannot drift (tests/checks/test_schema_limits.py). A new
field is one row here, a field of the record it belongs to, and the code that uses it
(docs/development.md, "A new workload field"). This module imports nothing heavy: the CLI
builds its options from it before a query needs the physics.
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from decodecalc.engine.limits import MAX_SCHEDULER_LIMIT
from decodecalc.errors import InputError
from decodecalc.record import record
from decodecalc.scenarios.fields import MAX_BATCH, MAX_TP

if TYPE_CHECKING:
    from decodecalc.model.dtypes import DType
    from decodecalc.model.model import Model
    from decodecalc.model.precision import Overrides

MAX_TOKENS = 2**24
"""Input or output tokens of one request: 16M is past every model's context."""
MAX_RATE = 1e6
"""Requests per second: beyond it a rate is a typo."""
MAX_PROPOSED = 32
"""Proposed tokens per step: engines use 1 to about 8; more is a typo."""
MAX_WORKERS = 1024
"""Workers per pool: more than any deployment published."""

WORKLOAD_KINDS = ("tokens", "count", "rate", "share", "rates", "flag", "text")
"""What a serving field's value is: a token count (1000, 4K), a whole number of at least
its least, a number (a rate), a share from 0 to 1, one rate or one per position, true or
false, a name."""


@record
class WorkloadField:
    """How one serving field is given at every door, and the values it may take."""

    name: str
    """The command's parameter, and the field of the record it fills."""
    flags: tuple[str, ...]
    """Its command-line option (empty: files only)."""
    key: tuple[str, ...] | None
    """Its key path in a deployment file (None: the command line only)."""
    kind: str
    """One of WORKLOAD_KINDS."""
    help: str
    """The option's help."""
    doc: str
    """What the value is, as the JSON Schema describes its key."""
    metavar: str = ""
    unit: str = ""
    least: float | None = None
    most: float | None = None
    above: bool = False
    """``least`` itself is refused (a rate above 0)."""
    under: bool = False
    """``most`` itself is refused (an acceptance under 1)."""
    default: Any = None
    sweep: bool = False
    """serving takes a comma list of it (one workload per value: the curve)."""
    why: str = ""
    """Said after the range when a value is out of it."""

    def check(self, value: float, label: str | None = None) -> None:
        """Refuse a value outside the row's limits (NaN included), in one line."""
        low = self.least is None or (value > self.least if self.above else value >= self.least)
        high = self.most is None or (value < self.most if self.under else value <= self.most)
        if math.isnan(value) or not (low and high):
            said = label or self.name.replace("_len", "_length").replace("_", " ")
            raise InputError(f"{said} {value} must be {self.range()}{self.why}")

    def range(self) -> str:
        """The limits in words: 'a whole number from 1 to 1,000,000', 'above 0 and at
        most 1e+06 requests/s', 'from 0 to under 1'."""
        low, high = _show(self.least), _show(self.most)
        unit = f" {self.unit}" if self.unit and self.kind == "rate" else ""
        if self.above:
            return f"above {low} and at most {high}{unit}"
        whole = "a whole number " if self.kind == "count" else ""
        return f"{whole}from {low} to {'under ' if self.under else ''}{high}{unit}"


def _show(number: float | None) -> str:
    return f"{number:,}" if isinstance(number, int) else f"{number:g}"


def _tokens(
    name: str, flag: str, key: tuple[str, ...], help: str, doc: str, **more: Any
) -> WorkloadField:
    return WorkloadField(name, (flag,), key, "tokens", help, doc, "TOKENS", "tokens", **more)


_WORKLOAD = ("workload",)
_SPECULATIVE = ("workload", "speculative")

WORKLOAD_FIELDS = (
    _tokens(
        "input_len",
        "--input-len",
        (*_WORKLOAD, "input_len"),
        "Prompt tokens per request, e.g. 1000 or 4K.",
        "Prompt tokens per request (1000, 1K)",
        least=1,
        most=MAX_TOKENS,
    ),
    _tokens(
        "output_len",
        "--output-len",
        (*_WORKLOAD, "output_len"),
        "Output tokens per request (at least 2).",
        "Output tokens per request",
        least=2,
        most=MAX_TOKENS,
        why=": TPOT is the time per token after the first",
    ),
    WorkloadField(
        "concurrency",
        ("--concurrency",),
        (*_WORKLOAD, "concurrency"),
        "count",
        "Requests kept in flight (closed loop, like --max-concurrency); a comma list sweeps "
        "it and draws the throughput-latency curve.",
        "Requests kept in flight (closed loop)",
        "N",
        "requests",
        least=1,
        most=MAX_BATCH,
        sweep=True,
    ),
    WorkloadField(
        "request_rate",
        ("--request-rate",),
        (*_WORKLOAD, "request_rate"),
        "rate",
        "Requests per second, Poisson arrivals (open loop); a comma list sweeps it.",
        "Poisson arrivals per second (open loop)",
        "RATE",
        "requests/s",
        least=0,
        most=MAX_RATE,
        above=True,
        sweep=True,
    ),
    WorkloadField(
        "max_num_batched_tokens",
        ("--max-num-batched-tokens",),
        ("max_num_batched_tokens",),
        "tokens",
        "Tokens one step may carry, the chunked-prefill budget (default: the engine's).",
        "Tokens one scheduler step may carry, the chunked-prefill budget (default: the "
        "engine's, vLLM 2048, or 8192 on GPUs of 70 GiB or more other than the A100); a vLLM "
        "config's max-num-batched-tokens",
        "N",
        "tokens",
        least=1,
        most=MAX_SCHEDULER_LIMIT,
    ),
    WorkloadField(
        "max_num_seqs",
        ("--max-num-seqs",),
        ("max_num_seqs",),
        "count",
        "Requests one step may carry (default: the engine's).",
        "Sequences one step may carry (default: the engine's, vLLM 256, or 1024 on GPUs of "
        "70 GiB or more other than the A100); a vLLM config's max-num-seqs",
        "N",
        "sequences",
        least=1,
        most=MAX_SCHEDULER_LIMIT,
    ),
    _tokens(
        "prefix_len",
        "--prefix-len",
        (*_WORKLOAD, "prefix_len"),
        "Prompt tokens every request shares at its start.",
        "Prompt tokens every request shares (default 0)",
        least=0,
        most=MAX_TOKENS - 1,
        default="0",
    ),
    WorkloadField(
        "prefix_hit_rate",
        ("--prefix-hit-rate",),
        (*_WORKLOAD, "prefix_hit_rate"),
        "share",
        "Share of requests finding the shared prefix in the prefix cache.",
        "Share of requests finding the prefix cached (default 1)",
        "FRACTION",
        least=0,
        most=1,
        default=1.0,
    ),
    WorkloadField(
        "shared_prefix_attention",
        ("--shared-prefix-attention/--no-shared-prefix-attention",),
        (*_WORKLOAD, "shared_prefix_attention"),
        "flag",
        "Read the shared prefix once per step for the whole batch (cascade attention). "
        "Default: on for vllm, off for other engines.",
        "Read the shared prefix once per step for the batch (default: the engine's)",
    ),
    WorkloadField(
        "speculative",
        ("--speculative",),
        (*_SPECULATIVE, "method"),
        "text",
        "Speculative decoding: eagle, mtp, or a draft model preset.",
        "eagle, mtp or draft (vLLM: eagle, eagle3, *_mtp, draft_model)",
        "METHOD",
    ),
    WorkloadField(
        "num_speculative_tokens",
        ("--num-speculative-tokens",),
        (*_SPECULATIVE, "num_speculative_tokens"),
        "count",
        "Tokens proposed per step (k).",
        "Tokens the drafter proposes per step (k)",
        "K",
        "tokens",
        least=1,
        most=MAX_PROPOSED,
        default=3,
    ),
    WorkloadField(
        "acceptance",
        ("--acceptance",),
        (*_SPECULATIVE, "acceptance"),
        "rates",
        "Acceptance: one per-token rate in [0, 1), or k per-position rates as vLLM logs "
        "them, e.g. 0.8 or 0.9,0.75,0.6.",
        "Share of proposed tokens accepted: one rate, or one per position as vLLM logs them",
        "RATE[,RATE...]",
        least=0,
        most=1,
        under=True,
    ),
    WorkloadField(
        "draft_model",
        (),
        (*_SPECULATIVE, "draft_model"),
        "text",
        "",
        "Draft model preset, for method draft",
    ),
    *(
        WorkloadField(
            f"{pool}_workers",
            (f"--{pool}-workers",),
            (pool, "workers"),
            "count",
            help,
            "Engine instances in the pool",
            pool[0].upper(),
            "workers",
            least=1,
            most=MAX_WORKERS,
        )
        for pool, help in (
            (
                "prefill",
                "Disaggregated serving: prefill workers (engine instances) on their own GPUs; "
                "needs --decode-workers.",
            ),
            (
                "decode",
                "Disaggregated serving: decode workers, each with the scenario's --tp, --ep "
                "and --dp-attention; needs --prefill-workers.",
            ),
        )
    ),
    *(
        WorkloadField(
            f"{pool}_tp",
            ("--prefill-tp",) if pool == "prefill" else (),
            (pool, "tp"),
            "count",
            "Each prefill worker's TP (default: the decode workers' --tp).",
            "Each worker's tensor-parallel GPUs",
            "N",
            "GPUs",
            least=1,
            most=MAX_TP,
        )
        for pool in ("prefill", "decode")
    ),
    *(
        WorkloadField(
            f"{pool}_{name}",
            (f"--prefill-{flag}/--no-prefill-{flag}",) if pool == "prefill" else (),
            (pool, name),
            "flag",
            f"{what} in the prefill workers (default: as --{flag}).",
            f"{what} in each worker",
        )
        for pool in ("prefill", "decode")
        for name, flag, what in (
            ("ep", "ep", "Expert parallelism"),
            ("dp_attention", "dp-attention", "Data-parallel attention"),
        )
    ),
    WorkloadField(
        "kv_link",
        ("--kv-link",),
        ("kv_link",),
        "text",
        "Link the prompt's KV crosses from a prefill to a decode worker (a link preset; "
        "'none': no transfer time). Default: the network between nodes.",
        "Disaggregated serving: the link the prompt's KV crosses from a prefill to a decode "
        "worker (a link preset, or 'none'); default the network between nodes",
        "LINK",
    ),
)
"""Every serving field, in the order serving's help lists them."""

WORKLOAD_FIELD = {f.name: f for f in WORKLOAD_FIELDS}


def keys_under(*path: str) -> tuple[str, ...]:
    """The keys a deployment file takes right under ``path`` (() for the deployment
    itself), in the table's order: a section ('workload') once, however many rows it holds."""
    depth = len(path)
    found = (
        f.key[depth]
        for f in WORKLOAD_FIELDS
        if f.key is not None and len(f.key) > depth and f.key[:depth] == path
    )
    return tuple(dict.fromkeys(found))


METHODS = ("eagle", "mtp", "draft")
"""EAGLE and MTP draft with one extra decoder layer on the target's own hidden states and
LM head; "draft" runs a separate small model (a model preset)."""


@record
class Speculation:
    """How a server speculates: the method, k proposed tokens and their acceptance
    (answers/speculative.py prices it)."""

    method: str
    proposed: int
    """k: tokens the drafter proposes per verify step."""
    acceptance: tuple[float, ...]
    """One constant per-token rate a, or k per-position rates (answers/speculative.py)."""
    draft_model: Model | None = None
    """The drafter for method "draft" (None for EAGLE and MTP)."""
    draft_weights: tuple[DType, Overrides, str | None] | None = None
    """The draft model's weights as its checkpoint stores them (resolve_weights with no
    --weights: its quantization_config's format, else BF16): vLLM loads a draft in its own
    format, not the target's --quantization. None: the target's (--weights)."""

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise InputError(
                f"speculative method {self.method!r} is not one of {', '.join(METHODS)}"
            )
        if (self.method == "draft") != (self.draft_model is not None):
            raise InputError("a draft-model speculation needs a draft model, and only it does")
        WORKLOAD_FIELD["num_speculative_tokens"].check(self.proposed, "speculative tokens")
        rates = self.acceptance
        if len(rates) not in (1, self.proposed):
            raise InputError(
                f"give one acceptance rate or {self.proposed} per-position rates "
                f"(one per proposed token), not {len(rates)}"
            )
        for rate in rates:
            WORKLOAD_FIELD["acceptance"].check(rate)
        if any(later > earlier for earlier, later in pairwise(rates)):
            raise InputError(
                "per-position acceptance rates never rise: position i is accepted only when "
                "every earlier one is"
            )

    def position_rates(self) -> tuple[float, ...]:
        """The share of verify steps accepting each proposed position: a^i for a constant
        rate a, else the rates as given."""
        if len(self.acceptance) > 1:
            return self.acceptance
        (rate,) = self.acceptance
        return tuple(rate**i for i in range(1, self.proposed + 1))

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens a verify step emits per sequence: its own token plus every
        accepted proposal, 1 + sum of the position rates."""
        return 1 + sum(self.position_rates())

    @property
    def queries(self) -> int:
        """Query tokens per sequence in the verify pass: the last token and k proposals."""
        return self.proposed + 1


@record
class Workload:
    """What a benchmark sends: how many requests at once or how often, and their sizes."""

    input_len: int
    output_len: int
    concurrency: int | None = None
    """Closed loop: requests kept in flight (a new one as soon as one ends)."""
    request_rate: float | None = None
    """Open loop: Poisson arrivals per second."""
    prefix_len: int = 0
    """Prompt tokens every request shares at its start (a system prompt)."""
    prefix_hit_rate: float = 1.0
    """Share of requests that find the shared prefix in the prefix cache."""
    speculative: Speculation | None = None
    shared_prefix_attention: bool | None = None
    """Read the shared prefix once per step for the whole batch (cascade attention);
    None: the engine's default (answers/serving.py SHARED_PREFIX_ENGINES)."""

    def __post_init__(self) -> None:
        if (self.concurrency is None) == (self.request_rate is None):
            raise InputError("give a concurrency or a request rate (one of them)")
        for name in ("input_len", "output_len", "concurrency", "request_rate"):
            value = getattr(self, name)
            if value is not None:
                WORKLOAD_FIELD[name].check(value)
        if not 0 <= self.prefix_len < self.input_len:
            raise InputError(
                f"prefix length {self.prefix_len} must be from 0 to under the input length "
                f"{self.input_len} (the last prompt token is always computed)"
            )
        WORKLOAD_FIELD["prefix_hit_rate"].check(self.prefix_hit_rate)

    @property
    def cached_tokens(self) -> float:
        """Prompt tokens per request the prefix cache saves, on average."""
        return self.prefix_len * self.prefix_hit_rate

    @property
    def new_tokens(self) -> int:
        """Prompt tokens per request the server computes, on average (the cached tokens
        rounded down: a token is cached whole or not at all)."""
        return self.input_len - math.floor(self.cached_tokens)
