"""Number formats and what one stored value costs in bits, scales included."""

from __future__ import annotations

import math
from fractions import Fraction

from decodecalc.record import record


@record
class DType:
    """A storage format for weights or the KV cache.

    ``bits_per_value`` is exact and includes block scales: NVFP4 stores 4 bits per value
    plus one 8-bit scale per 16 values, so 4 + 8/16 = 4.5 bits. For a mixture (llama.cpp's
    Q4_K_M quantises some tensors at a higher precision) it is a published average.
    """

    id: str
    name: str
    bits_per_value: Fraction
    kv_cache: bool
    """Whether inference engines offer it as a KV-cache format."""
    compute: bool
    """A format activations run in (FP32/FP16/BF16): the KV cache defaults to it."""
    mixture: bool
    description: str
    matmul: str = "bf16"
    """The tensor-core rate its matrix multiplies run at: bf16, fp8, fp4 or fp32."""
    aliases: tuple[str, ...] = ()
    source: str = ""
    weights: bool = True
    """Whether a checkpoint stores weights in it: False for KV-cache layouts (KIVI,
    LMDeploy's, FlashMLA's) and index tables, which --weights refuses."""
    layer_kind: str | None = None
    """The one layer kind (LayerKind.kind: "mla", "compressed attention") whose cache the
    format lays out, FlashMLA's latent or DeepSeek-V4's entry; None: any cache."""

    head_scale_bits: Fraction = Fraction(0)
    """Scale bits stored per head vector of every token (LMDeploy's KV: an FP16 scale and
    zero per head per token); ``bits_per_value`` counts them at ``head_width`` values."""
    head_width: int = 0

    def at_head_width(self, width: Fraction) -> DType:
        """The format on heads ``width`` values wide: a per-head scale spread over fewer
        values costs more per value (LMDeploy's 32 scale bits: 4.25 bits at 128, 4.5 at
        64)."""
        if not self.head_scale_bits or width == self.head_width:
            return self
        from decodecalc.record import replace

        shift = self.head_scale_bits * (1 / width - Fraction(1, self.head_width))
        return replace(self, bits_per_value=self.bits_per_value + shift)

    def bytes_for(self, values: int | Fraction) -> Fraction:
        """Exact bytes for ``values`` stored values: values * bits_per_value / 8."""
        return values * self.bits_per_value / 8


def ceil_bytes(value: Fraction) -> int:
    """Round a byte count up: a partly used byte is still a byte read."""
    return math.ceil(value)
