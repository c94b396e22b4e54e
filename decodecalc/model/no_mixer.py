"""A layer without a token mixer: Nemotron-NAS (DeciLM) leaves attention out of some of its
layers ("no_op") or puts a single linear map in its place ("replace_with_linear"), found by
its architecture search. Such a layer caches nothing and mixes no tokens; its MLP, if it
has one, still runs every step."""

from __future__ import annotations

from decodecalc.model.layer_kind import CacheTerms
from decodecalc.model.linear_attention import BF16_STATE, ConstantState
from decodecalc.model.tensors import Sharding, TensorGroup
from decodecalc.record import record


@record
class NoMixer(ConstantState):
    """No attention in this layer (``linear`` False), or one hidden x hidden linear map where
    attention would be (``linear`` True: DeciLMLinearAttention, no bias). Either way no KV
    cache, no state, no attention FLOPs."""

    linear: bool = False

    kind = "no attention"

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        if not self.linear:
            return ()
        return (TensorGroup("attention q, o", hidden * hidden, True, Sharding.SPLIT),)

    def describe(self) -> str:
        return "a linear layer in place of attention" if self.linear else "no attention"

    def tp_ok(self, tp: int) -> bool:
        return True

    def attention_flops(self, context_tokens: int) -> int:
        """Nothing attends: the linear map's FLOPs are a weight's, counted with the weights."""
        return 0

    state_format = BF16_STATE  # (no state to price)

    def state_parts(self, tp: int) -> tuple[int, int]:
        return 0, 0

    def cache_terms(self, tp: int) -> CacheTerms:
        return CacheTerms(self.kind, "no KV and no state")
