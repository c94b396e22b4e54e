"""Parallelism beyond one tensor-parallel group (docs/physics.md, "Parallelism beyond one
TP group"): pipeline stages, experts spread whole over GPUs, data-parallel attention, and
what their transfers cost on the links within and between nodes.

A scenario's GPUs are ``pp`` stages of ``tp`` GPUs each. Every per-GPU figure is one rank's
of one stage; the step a sequence waits for runs through every stage in turn, so its bytes
are the stages' bytes added up (the same as one stage holding every layer) plus the
hand-offs between them.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

from decodecalc.model.tensors import Sharding, TensorGroup
from decodecalc.record import record, replace
from decodecalc.step.flops import ACTIVATION_BYTES

if TYPE_CHECKING:
    from decodecalc.model.hardware import Link
    from decodecalc.model.kernels import AllReduceRates
    from decodecalc.model.model import Model
    from decodecalc.scenarios.scenario import Scenario

HANDOFF_TENSORS = 2
"""A pipeline stage hands the next the hidden state and the residual stream (vLLM's
IntermediateTensors for Llama, Qwen and DeepSeek): two tensors of hidden size per token."""

_EMBEDDING, _LM_HEAD, _TIED, _NORMS = (
    "embedding",
    "LM head",
    "embedding = LM head (tied)",
    "norms and biases",
)
"""The group names model/model.py gives the ends of the stack."""


def stage_layer_counts(layers: int, pp: int) -> tuple[int, ...]:
    """Layers per pipeline stage as vLLM splits them (vllm/distributed/utils.py
    get_pp_indices): layers // pp each, and the remainder one each to the stages before the
    last, from the second-to-last backwards (the last stage also runs the LM head).
    80 layers over 3 stages: 27, 27, 26."""
    counts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        counts[-i] += 1
    return tuple(counts)


def stage_groups(model: Model, pp: int) -> tuple[tuple[TensorGroup, ...], ...]:
    """Each stage's tensor groups: its layers', the input embedding (and any vision tower)
    on the first stage, the final norm and the LM head on the last. A tied embedding is held
    twice, by the first stage to gather rows and by the last to multiply."""
    if pp == 1:
        return (model.tensor_groups(),)
    # Each stage is a new part-model whose groups are summed again, at every batch an
    # estimate or a plan tries: keep the last few models' answers, by identity (the model
    # is kept too, so its id cannot be reused; hashing a model costs a tenth of a split).
    known = _STAGE_GROUPS.get((id(model), pp))
    if known is not None and known[0] is model:
        return known[1]
    if len(_STAGE_GROUPS) >= 16:
        _STAGE_GROUPS.clear()
    split = _split_groups(model, pp)
    _STAGE_GROUPS[(id(model), pp)] = (model, split)
    return split


_STAGE_GROUPS: dict[tuple[int, int], tuple[Model, tuple[tuple[TensorGroup, ...], ...]]] = {}
"""stage_groups' recent answers by (id(model), pp)."""


def _split_groups(model: Model, pp: int) -> tuple[tuple[TensorGroup, ...], ...]:
    stages = []
    start = 0
    for index, count in enumerate(stage_layer_counts(len(model.layers), pp)):
        first, last = index == 0, index == pp - 1
        part = replace(
            model,
            layers=model.layers[start : start + count],
            extra_groups=model.extra_groups if first else (),
        )
        kept = (_on_stage(g, model.hidden_size, first, last) for g in part.tensor_groups())
        stages.append(tuple(g for g in kept if g is not None))
        start += count
    return tuple(stages)


def _on_stage(group: TensorGroup, hidden: int, first: bool, last: bool) -> TensorGroup | None:
    if group.name == _EMBEDDING:
        return group if first else None
    if group.name == _LM_HEAD:
        return group if last else None
    if group.name == _TIED:
        if last:
            return group
        return replace(group, streamed=False) if first else None
    if group.name == _NORMS and group.sharding is Sharding.REPLICATED and not last:
        return replace(group, params=group.params - hidden)  # the final norm is the last's
    return group


def held_params(group: TensorGroup, tp: int, dp_attention: bool) -> int:
    """Parameters of a group one GPU holds: its TP shard; with data-parallel attention every
    rank holds all but the routed experts (vLLM's data-parallel ranks are replicas of
    everything outside the MoE blocks), and the experts are spread over the tp GPUs."""
    if dp_attention and not group.experts:
        return group.params
    return group.params_per_gpu(tp)


def gpu_params(s: Scenario, group: TensorGroup) -> int:
    """Parameters of a group one of the scenario's GPUs holds (held_params); under --ep
    with redundant experts, the routed experts' replicas too: (E + R) / N experts each."""
    params = held_params(group, s.tp, s.dp_attention)
    moe = s.model.moe()
    if not (group.experts and s.ep and s.eplb_redundant and moe is not None):
        return params
    return -(-params * (moe.num_experts + s.eplb_redundant) // moe.num_experts)


def read_share(s: Scenario, group: TensorGroup, tokens: int) -> Fraction:
    """Share of what a GPU holds of a group (gpu_params) that a pass over ``tokens`` tokens
    reads, on the GPU that reads the most: under --ep, the routed experts' busiest GPU's
    expected replicas over the replicas it holds (step/expert_balance.py); otherwise every
    GPU reads the same share, that of the experts touched."""
    moe = s.model.moe()
    if not (group.experts and s.ep and s.tp > 1 and group.streamed and moe is not None):
        return group.read_fraction(tokens)
    from decodecalc.step.expert_balance import busiest_slots

    slots = busiest_slots(
        moe.num_experts,
        moe.experts_per_token,
        tokens,
        s.tp,
        s.eplb_redundant,
        moe.zero_experts,
    )
    return Fraction(slots) * s.tp / (moe.num_experts + s.eplb_redundant)


def handover_seconds(link: Link | None, per_gpu_bytes: int) -> float:
    """A disaggregated request's KV hand-over from a prefill worker to a decode worker:
    every decode GPU pulls its share at once, each over its own NIC (latency + bytes /
    bandwidth); no link, no time."""
    if link is None or per_gpu_bytes == 0:
        return 0.0
    return link.latency_s + per_gpu_bytes / link.bandwidth_bytes_per_s


def handoff_crosses_nodes(stage: int, tp: int, gpus_per_node: int) -> bool:
    """Whether stage ``stage`` hands off to the next across nodes: rank r of stage s is GPU
    s x tp + r, GPUs filling nodes in order, and each rank sends to its peer in the next
    stage; the slowest pair sets the time."""
    if tp >= gpus_per_node:
        return True
    return any(
        (stage * tp + r) // gpus_per_node != ((stage + 1) * tp + r) // gpus_per_node
        for r in range(tp)
    )


CUSTOM_ALLREDUCE_MAX_BYTES = 8 * 2**20
"""The largest message vLLM's custom all-reduce takes (CustomAllreduce's max_size, 8 MiB,
vllm/distributed/device_communicators/custom_all_reduce.py); larger ones go to NCCL."""


@record
class CommSplit:
    """Seconds of one forward pass spent on each kind of transfer."""

    allreduce_s: float = 0.0
    """All-reduces of tensor parallelism (and the all-gathers and reduce-scatters around
    TP-sharded experts under data-parallel attention)."""
    all_to_all_s: float = 0.0
    """Expert parallelism's dispatch and combine."""
    handoff_s: float = 0.0
    """Activations passed from one pipeline stage to the next."""

    @property
    def total_s(self) -> float:
        return self.allreduce_s + self.all_to_all_s + self.handoff_s


@record
class Communication:
    """Every transfer between GPUs in one forward pass, counted once per scenario."""

    hidden_size: int
    group: int
    """GPUs in a stage's group: tensor-parallel, or the ranks of data-parallel attention."""
    link: Link
    """The link within a node."""
    node_link: Link | None = None
    """The network between nodes (None: every GPU the scenario uses is in one node)."""
    gpus_per_node: int | None = None
    allreduce_calls: int = 0
    """Ring all-reduces of every token: latency + 2 (N-1)/N x bytes / bandwidth each."""
    gather_calls: int = 0
    """All-gathers and reduce-scatters of every token: latency + (N-1)/N x bytes / bandwidth."""
    all_to_all_layers: int = 0
    """MoE layers paying a dispatch and a combine."""
    experts_per_token: int = 0
    token_ways: int = 1
    """Ranks the tokens are split over (data-parallel attention: a GPU sends its own)."""
    handoffs: tuple[Link, ...] = ()
    """The link each hand-off between pipeline stages crosses, in order."""

    @property
    def spans_nodes(self) -> bool:
        return self.gpus_per_node is not None and self.group > self.gpus_per_node

    @property
    def group_link(self) -> Link:
        """What the group's collectives run at: a ring is as fast as its slowest hop, so a
        group larger than a node runs at the slower of the node's link and the network
        (Link.slowest_hop)."""
        if self.spans_nodes and self.node_link is not None:
            return self.link.slowest_hop(self.node_link)
        return self.link

    @property
    def calls(self) -> int:
        """Collectives per pass that pay the group link's per-call latency (an engine's own
        all-reduce latency replaces it; engine/profile.py)."""
        return self.allreduce_calls + self.gather_calls + 2 * self.all_to_all_layers

    def seconds(self, tokens: int) -> float:
        return self.split(tokens).total_s

    def measured(self, rates: tuple[AllReduceRates, ...]) -> AllReduceRates | None:
        """The engine's own all-reduce at the group's size (kernel tables), where it prices
        this pass's transfers: plain tensor parallelism within a node (no gathers, no
        all-to-all, which the tables do not time); None elsewhere."""
        if self.group < 2 or self.spans_nodes or self.gather_calls or self.all_to_all_layers:
            return None
        from decodecalc.model.kernels import allreduce_at

        return allreduce_at(rates, self.group)

    def measured_seconds(self, rates: AllReduceRates, ring_s: float) -> float:
        """The all-reduces at the measured rates (each call's latency, and the bytes the
        link's ring moves, ``ring_s`` at the link's bandwidth, at the bus bandwidth) for
        messages the engines' custom all-reduce takes, a decode step's; a larger one, a
        long prefill chunk's, goes to NCCL's ring over the link as before (vLLM's
        CustomAllreduce takes up to CUSTOM_ALLREDUCE_MAX_BYTES)."""
        if not self.allreduce_calls or self.group < 2:
            return ring_s
        ring_share = 2 * (self.group - 1) / self.group
        message = ring_s * self.link.bandwidth_bytes_per_s / (self.allreduce_calls * ring_share)
        if message > CUSTOM_ALLREDUCE_MAX_BYTES:
            return self.allreduce_calls * self.link.latency_s + ring_s
        scale = self.link.bandwidth_bytes_per_s / rates.bus_bandwidth_bytes_per_s
        return self.allreduce_calls * rates.latency_s + ring_s * scale

    def split(self, tokens: int) -> CommSplit:
        """Each kind's seconds for a pass over ``tokens`` tokens (a decode step's batch)."""
        n, link = self.group, self.group_link
        message = tokens * self.hidden_size * ACTIVATION_BYTES
        ring = (n - 1) / n * message / link.bandwidth_bytes_per_s
        allreduce = 0.0
        if n > 1:
            allreduce = self.allreduce_calls * (link.latency_s + 2 * ring)
            allreduce += self.gather_calls * (link.latency_s + ring)
        own = math.ceil(tokens / self.token_ways)
        return CommSplit(
            allreduce_s=allreduce,
            all_to_all_s=2 * self.all_to_all_layers * self._dispatch_s(own) if n > 1 else 0.0,
            handoff_s=sum(
                h.latency_s
                + HANDOFF_TENSORS
                * own
                * self.hidden_size
                * ACTIVATION_BYTES
                / h.bandwidth_bytes_per_s
                for h in self.handoffs
            )
            + 0.0,
        )

    def _dispatch_s(self, own_tokens: int) -> float:
        """One dispatch (or combine, the same bytes back): each of a GPU's tokens goes to
        experts_per_token experts, spread uniformly, so a share (N-1)/N of its (token,
        expert) pairs leaves the GPU. Past a node, the pairs for GPUs of other nodes cross
        the network while the rest cross the node's own link, at once."""
        n = self.group
        pairs = own_tokens * self.experts_per_token * self.hidden_size * ACTIVATION_BYTES
        if not self.spans_nodes or self.node_link is None or self.gpus_per_node is None:
            return self.link.latency_s + pairs * (n - 1) / n / self.link.bandwidth_bytes_per_s
        local = self.gpus_per_node
        within = pairs * (local - 1) / n / self.link.bandwidth_bytes_per_s
        across = pairs * (n - local) / n / self.node_link.bandwidth_bytes_per_s
        return self.node_link.latency_s + max(within, across)


def tp_allreduces(model: Model) -> int:
    """All-reduces of a tensor-parallel pass: one after each row-parallel output, the
    mixer's and the feed-forward block's, so two a layer where both are there. A layer with
    no MLP (Nemotron-H's mixer followed by another mixer; the attention half of a Falcon-H1
    layer, read as two layers) pays one: Nemotron Nano 2's 56 blocks make 31 layers here,
    6 of them without an MLP, so 2 x 31 - 6 = 56 all-reduces, one per block as in vLLM. A
    layer with no attention (Nemotron-NAS's no_op) pays none for it."""
    hidden = model.hidden_size
    return sum(
        n * (bool(layer.mixer.tensor_groups(hidden)) + bool(layer.ffn.tensor_groups(hidden)))
        for layer, n in model.layer_counts()
    )


def communication(s: Scenario) -> Communication | None:
    """The transfers of a scenario's pass (None: no link, so none counted).

    Tensor-parallel attention all-reduces twice per layer (tp_allreduces), the MoE block's
    included: with --ep and no data-parallel attention every GPU already holds every token,
    so each runs its own experts on all of them and one all-reduce combines them (vLLM with
    data-parallel-size 1 dispatches nothing). Under data-parallel attention a rank holds
    only its own sequences: dense layers need no transfer, and each MoE layer either
    gathers every token for its TP-sharded experts and scatters the sums back, or, with
    --ep, dispatches its tokens to the experts' GPUs and combines the answers (all-to-all).
    """
    if s.link is None:
        return None
    model, n = s.model, s.tp
    moe_layers = sum(n for layer, n in model.layer_counts() if layer.ffn.routed)
    moe = model.moe()
    allreduce = gather = all_to_all = 0
    if not s.dp_attention:
        allreduce = tp_allreduces(model) if n > 1 else 0
    elif s.ep:
        all_to_all = moe_layers
    else:
        gather = 2 * moe_layers
    node = s.gpus_per_node
    handoffs = tuple(
        s.node_link
        if node is not None and s.node_link is not None and handoff_crosses_nodes(i, n, node)
        else s.link
        for i in range(s.pp - 1)
    )
    return Communication(
        hidden_size=model.hidden_size,
        group=n,
        link=s.link,
        node_link=s.node_link,
        gpus_per_node=node,
        allreduce_calls=allreduce,
        gather_calls=gather,
        all_to_all_layers=all_to_all,
        experts_per_token=0 if moe is None else moe.experts_per_token,
        token_ways=n if s.dp_attention else 1,
        handoffs=handoffs,
    )
