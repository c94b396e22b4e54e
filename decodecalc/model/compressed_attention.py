"""DeepSeek-V4's hybrid attention: a sliding window of raw entries plus entries that pool
the whole past, ``compress_ratio`` tokens to one.

Every layer caches one 512-wide entry per token (K and V together, a single KV head) for the
last ``sliding_window`` tokens. A layer of ratio 4 (compressed sparse attention, CSA) also
pools every 4 tokens into one entry and reads only the ``index_topk`` entries a lightning
indexer picks, the indexer scoring every pooled entry from its own key cache; a layer of
ratio 128 (heavily compressed attention, HCA) pools every 128 tokens and reads all of them;
a layer of ratio 0 has the window only. So per sequence at context T a layer holds

    min(T, w) x d + T / r x d (+ T / 4 index keys on CSA layers)

elements, and a step reads the window, min(T / 4, k) pooled entries (CSA) or all T / 128
(HCA), and every index key. Pooled entries count as T / r per token, the slope of the
floor(T / r) an engine holds (at most one entry less). Reference: DeepSeek's inference code
(inference/model.py of deepseek-ai/DeepSeek-V4-Flash) and the tensor shapes of its
checkpoints.
"""

from __future__ import annotations

from fractions import Fraction

from decodecalc.model.causal import causal_pairs
from decodecalc.model.layer_kind import CacheTerms, TpRule
from decodecalc.model.mla import INDEXER_SCALE_BLOCK
from decodecalc.model.pooled import PooledEntries
from decodecalc.model.tensors import Sharding, TensorGroup
from decodecalc.record import record

SPLIT, REPLICATED = Sharding.SPLIT, Sharding.REPLICATED

SPARSE_RATIO = 4
"""The ratio whose layers read a top k chosen by an indexer (overlapping windows of 8)."""


@record
class CompressedAttention:
    """One DeepSeek-V4 attention layer: ``num_heads`` query heads of ``head_dim`` over one
    shared KV head of ``head_dim`` (the last ``qk_rope_head_dim`` rotated), a low-rank query
    (``q_lora_rank``), a grouped low-rank output (``o_groups`` groups of ``o_lora_rank``),
    a window of ``sliding_window`` raw entries and, for ratio 4 or 128, a compressor (and
    for 4 an indexer of ``index_heads`` x ``index_head_dim``)."""

    num_heads: int
    head_dim: int
    qk_rope_head_dim: int
    q_lora_rank: int
    o_lora_rank: int
    o_groups: int
    sliding_window: int
    compress_ratio: int
    index_topk: int = 0
    index_heads: int = 0
    index_head_dim: int = 0

    kind = "compressed attention"
    attention_chunk = None
    kv_read_limit = None
    """The window caps the raw entries; the pooled ones are ``compressed_kv``."""

    @property
    def sparse(self) -> bool:
        return self.compress_ratio == SPARSE_RATIO

    @property
    def compressed_kv(self) -> PooledEntries:
        """Pooled entries as (ratio, elements per token, tokens a step reads of them or None
        for all): d / r elements a token, every one held; a CSA layer reads the top k
        entries, those of k x r tokens."""
        if not self.compress_ratio:
            return ()
        per_token = self.head_dim // self.compress_ratio
        read = self.index_topk * self.compress_ratio if self.sparse else None
        return ((self.compress_ratio, per_token, read),)

    @property
    def fixed_kv_bytes_per_token(self) -> int:
        """The indexer's key cache on CSA layers: one key of ``index_head_dim`` FP8 values
        and an FP32 scale per 128 per pooled entry (SGLang's DeepSeekV4IndexerPool, as
        vLLM's and DeepSeek-V3.2's: 132 bytes for 128 values), an entry per 4 tokens."""
        if not self.sparse or not self.index_heads:
            return 0
        entry = self.index_head_dim + 4 * -(-self.index_head_dim // INDEXER_SCALE_BLOCK)
        if entry % self.compress_ratio:
            raise ValueError(f"an index key of {entry} bytes is not whole bytes per token")
        return entry // self.compress_ratio

    def tensor_groups(self, hidden: int) -> tuple[TensorGroup, ...]:
        """Shapes as the checkpoint stores them: wq_b (heads x d from the q latent), wo_a
        (each group's heads to o_lora_rank), wo_b (groups x o_lora_rank to hidden) split
        by heads; wq_a and wkv replicated; the compressors' wkv and wgate (twice the width
        on ratio 4, whose windows overlap) and the indexer's weights_proj in BF16; the
        indexer's wq_b in the checkpoint's FP8; the attention sinks and the compressors'
        positional biases (ape) in FP32."""
        d, q, r = self.head_dim, self.q_lora_rank, self.compress_ratio
        heads = self.num_heads * d
        q_o = heads * q + self.o_lora_rank * heads + hidden * self.o_groups * self.o_lora_rank
        norms = q + d  # q_norm, kv_norm
        sides = self.num_heads  # attn_sink
        compressors = 0
        if r:
            width = 2 * d if self.sparse else d
            compressors += 2 * width * hidden  # wkv, wgate
            norms += d
            sides += r * width  # ape
        groups = [
            TensorGroup("attention q, o", q_o, True, SPLIT),
            TensorGroup("MLA down-projections", hidden * q + hidden * d, True, REPLICATED),
        ]
        if self.sparse and self.index_heads:
            i = self.index_head_dim
            compressors += 2 * 2 * i * hidden + hidden * self.index_heads
            norms += i
            sides += r * 2 * i
            indexer = q * self.index_heads * i
            groups.append(TensorGroup("indexer", indexer, True, REPLICATED))
        if compressors:
            groups.append(TensorGroup("compressors", compressors, True, REPLICATED))
        groups += [
            TensorGroup("norms and biases", norms, True, REPLICATED),
            TensorGroup("side blocks", sides, True, REPLICATED),
        ]
        return tuple(groups)

    def describe(self) -> str:
        shape = f"{self.num_heads} heads x {self.head_dim}, one KV head"
        window = f"window {self.sliding_window:,}"
        if self.sparse:
            return (
                f"CSA {shape}: {window} + 1 entry per {self.compress_ratio} tokens, top "
                f"{self.index_topk:,} by an indexer of {self.index_heads} heads x "
                f"{self.index_head_dim}"
            )
        if self.compress_ratio:
            return f"HCA {shape}: {window} + 1 entry per {self.compress_ratio} tokens, all read"
        return f"sliding-window {shape}: {window}"

    def tp_ok(self, tp: int) -> bool:
        return self.num_heads % tp == 0 and (self.o_groups % tp == 0 or tp % self.o_groups == 0)

    def kv_elements_per_token(self, tp: int) -> int:
        """The window's raw entry, whole on every GPU (one KV head is not split)."""
        return self.head_dim

    def kv_reread_elements_per_token(self, tp: int) -> int:
        return 0

    def kv_replicated(self, tp: int) -> bool:
        return tp > 1

    def _entries_read(self, context_tokens: int) -> int:
        """Entries one query reads at context T: the window's, and the pooled ones."""
        window = min(context_tokens, self.sliding_window)
        if not self.compress_ratio:
            return window
        pooled = context_tokens // self.compress_ratio
        return window + (min(pooled, self.index_topk) if self.sparse else pooled)

    @property
    def _index_per_entry(self) -> int:
        return 2 * self.index_heads * self.index_head_dim if self.sparse else 0

    def attention_flops(self, context_tokens: int) -> int:
        """Scores and values over the entries read, 4 x heads x d each (K and V are the
        same entry), plus the indexer's scores over every pooled entry on CSA layers."""
        per_entry = 4 * self.num_heads * self.head_dim
        pooled = context_tokens // self.compress_ratio if self.compress_ratio else 0
        return self._entries_read(context_tokens) * per_entry + pooled * self._index_per_entry

    def prefill_attention_flops(self, prompt_tokens: int) -> int:
        """Causal pairs: min(t, w) raw entries and t / r pooled ones (top k of them on CSA
        layers) for token t; the indexer scores every pooled entry."""
        per_entry = 4 * self.num_heads * self.head_dim
        pairs = causal_pairs(prompt_tokens, self.sliding_window)
        r = self.compress_ratio
        if not r:
            return pairs * per_entry
        read = self.index_topk * r if self.sparse else None
        pooled = causal_pairs(prompt_tokens, read) // r
        scored = causal_pairs(prompt_tokens, None) // r
        return (pairs + pooled) * per_entry + scored * self._index_per_entry

    def state_elements(self, tp: int) -> int:
        """The compressors' partial windows (a few hundred KB a layer, FP32 in SGLang's
        state pools) are not counted: a constant, small beside the pooled entries."""
        return 0

    def state_bytes(self, tp: int) -> Fraction:
        return Fraction(0)

    def cache_terms(self, tp: int) -> CacheTerms:
        """The window's entries, and the pooled ones per token with how many are read."""
        window = f"window {self.sliding_window:,} x {self.head_dim} elements"
        for ratio, per_token, read in self.compressed_kv:
            reads = f"top {read // ratio:,} read" if read else "all read"
            pooled = f"{self.head_dim} / {ratio} = {per_token} per token pooled ({reads})"
            return CacheTerms(self.kind, f"{window} + {pooled}")
        return CacheTerms(self.kind, f"{window} (window only)")

    def tp_rule(self) -> TpRule:
        return TpRule("one KV head: window and pooled entries replicated on every TP rank")
