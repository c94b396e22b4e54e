"""The costs that grow with the sequences a step runs (issue 28, item 3): each priced per
operation that a running sequence adds, never as one fee multiplied by layers and experts.

    t_running = B x F_tok x c_ffn           per token feed-forward pass: a dense layer's
                                            MLP once, an MoE layer's once per routed expert
                                            (the rows, gathers and scatters of one token in
                                            one GEMM group)
              + B x c_run                   per running request: the scheduler's and the
                                            sampler's CPU and GPU time for one more request
              + B x L x c_mixer             per sequence per layer's token mixer (attention
                                            or recurrent): the work of one more sequence a
                                            mixer kernel does beyond reading its cache or
                                            state (the split reduction, the block table,
                                            MLA's per-query projections, a state's gates)
              + B x L_state x c_state       per sequence per recurrent or linear-attention
                                            layer, beyond c_mixer: its state updated and
                                            written back

B is the batch, F_tok the feed-forward passes of one token (the dense layers plus the
experts per token summed over the MoE layers), L the layers and L_state those whose mixer
keeps a constant state. c_mixer is charged to every mixer, not to attention alone: the
fitted points' models are all attention, so they cannot tell an attention layer's cost
from a recurrent one's, and a recurrent layer's kernels do per-sequence work too (charged
to attention alone, Qwen3-Next's 36 Gated DeltaNet layers of 48 would cost nothing per
sequence); c_state is what a recurrent layer costs beyond it, fitted only where hybrid
models are measured at several batches. Each c is an EngineParams field, fitted in
calibration/engine_fit.py where the points identify it (a scenario measured at several
batches, and models whose counts tell the operations apart); one the points cannot
identify stays at the prior's value. In the fitted sets the batch sweeps that show them
are AMD's, at concurrency up to 128-256: validation/points.yaml's DeepSeek-R1 on 8 x
MI300X (SGLang 0.4.2, vLLM 0.7.3, batch 4-128) and vLLM 0.10's Llama-3.1-70B and 405B on
MI300X (batch 1-256), and the fitted share of validation/points-2026-thin-regimes.yaml
(ATOM and vLLM 0.19 on MI355X, concurrency 4-256).

The step's other fixed costs (per layer, per step, per MoE layer) do not grow with the
batch: step/engine_terms.py StepCounts adds these parts to them (RunningCounts.parts)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from decodecalc.record import record

if TYPE_CHECKING:
    from decodecalc.engine.profile import EngineParams
    from decodecalc.model.model import Model
    from decodecalc.model.moe import MoE


@record
class RunningCost:
    """One operation a running sequence adds: its fit unknown, EngineParams field, profile
    key and the label explain and fixed_parts give it."""

    name: str
    """The unknown's name in calibration/engine_fit.py PARAMETERS."""
    field: str
    key: str
    """The key in a profile's YAML (loading/presets.py, loading/saved.py)."""
    label: str


RUNNING_COSTS = (
    RunningCost("per_ffn_pass", "per_ffn_pass_s", "per_ffn_pass", "per token feed-forward pass"),
    RunningCost("per_running", "per_running_s", "per_running", "per running request"),
    RunningCost(
        "per_mixer_sequence",
        "per_mixer_sequence_s",
        "per_mixer_sequence",
        "per sequence per mixer layer",
    ),
    RunningCost(
        "per_state_sequence",
        "per_state_sequence_s",
        "per_state_sequence",
        "per sequence per recurrent layer",
    ),
)
"""The running costs, in the order the fit takes them: a single model's batch sweep
identifies only the first, and each next one needs models whose counts differ
(calibration/engine_fit.py: _costs_chosen). The feed-forward pass comes first because it is
the one that carries over between models: on validation/points.yaml's MI300X sweeps one
token's pass costs about the same through a dense MLP as through one routed expert (vLLM
on Llama-3.1-70B 1.3 us, 405B 2.0 us, DeepSeek-V3 0.8 us; SGLang on DeepSeek-V3 1.5 us),
so a model left out is predicted from the others within its band (docs/accuracy.md), where
a cost per request or per mixer layer would not count DeepSeek-V3's 464 expert passes."""


@record
class RunningCounts:
    """What a step's running costs are counted in: each RUNNING_COSTS entry's count."""

    per_ffn_pass: int
    """Token feed-forward passes: the batch x (dense layers + experts per token summed over
    the MoE layers)."""
    per_running: int
    """Running requests: the batch."""
    per_mixer_sequence: int
    """The batch x layers (every layer's token mixer)."""
    per_state_sequence: int
    """The batch x layers whose mixer keeps a constant recurrent or linear state."""

    @classmethod
    def of(
        cls, model: Model, batch: int, mixed: int | None = None, expert_ranks: int = 1
    ) -> RunningCounts:
        """The counts of ``batch`` sequences through ``model``'s layers on the busiest GPU,
        ``mixed`` of them through its token mixers and its scheduler (None: all; under
        data-parallel attention a GPU's attention and its rank's scheduler run their own
        share, Scenario.sequences_per_gpu), the routed experts' passes spread over
        ``expert_ranks`` GPUs (feed_forward_passes)."""
        state = sum(n for layer, n in model.layer_counts() if layer.mixer.state_elements(1) > 0)
        mixed = batch if mixed is None else mixed
        return cls(
            feed_forward_passes(model, batch, mixed, expert_ranks),
            mixed,
            mixed * len(model.layers),
            mixed * state,
        )

    def count(self, cost: RunningCost) -> int:
        value: int = getattr(self, cost.name)
        return value

    def counts(self) -> dict[str, int]:
        """Each running cost's count by its label (StepCounts.count)."""
        return {cost.label: self.count(cost) for cost in RUNNING_COSTS}

    def parts(self, params: EngineParams) -> tuple[tuple[str, float], ...]:
        """Each running cost that is not zero, named, in seconds: the named parts a step's
        fixed costs list (StepCounts.fixed_parts)."""
        out = []
        for cost in RUNNING_COSTS:
            rate: float = getattr(params, cost.field)
            if rate:
                out.append((cost.label, self.count(cost) * rate))
        return tuple(out)

    def seconds(self, params: EngineParams) -> float:
        """Every running cost together."""
        return sum(seconds for _, seconds in self.parts(params))


def feed_forward_passes(
    model: Model, batch: int, mixed: int | None = None, expert_ranks: int = 1
) -> int:
    """Token feed-forward passes the busiest GPU makes in a step: ``mixed`` sequences
    (None: the batch) through each dense layer's MLP (all of them under tensor
    parallelism; under data-parallel attention a rank's own, its dense layers being
    replicas: step/parallelism.py held_params), and the batch's routed (token, expert)
    pairs spread over the ``expert_ranks`` GPUs that hold the experts under expert
    parallelism (1: each rank holds a slice of every expert and sees every pair). Routing
    balanced, the busiest rank rounded up: counting every pair on each of a 72-GPU expert
    group's ranks would charge a decode GPU 72 times the gathers and scatters it runs."""
    dense = routed = 0
    for layer, n in model.layer_counts():
        if layer.ffn.routed:
            routed += n * cast("MoE", layer.ffn).experts_per_token
        else:
            dense += n
    mixed = batch if mixed is None else mixed
    return mixed * dense - (-batch * routed // expert_ranks)
