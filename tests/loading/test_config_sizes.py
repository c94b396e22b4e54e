"""config.json sizes are bounded like num_hidden_layers (loading/families.py MAX_SIZE for
widths, counts and vocabularies; MAX_CONTEXT_TOKENS for token counts), and the bytes of a
large model stay exact integers: no float quotient on the way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decodecalc.context import MAX_CONTEXT_TOKENS
from decodecalc.loading.families import MAX_SIZE
from decodecalc.model.tensors import Sharding, TensorGroup
from tests.conftest import Run

LLAMA = Path(__file__).parents[1] / "fixtures" / "configs" / "llama-3.1-8b.json"


def _config(tmp_path: Path, **fields: object) -> str:
    data = {**json.loads(LLAMA.read_text()), **fields}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize(
    ("field", "value", "limit"),
    [
        ("intermediate_size", 10**24, MAX_SIZE),
        ("hidden_size", MAX_SIZE + 1, MAX_SIZE),
        ("vocab_size", 10**12, MAX_SIZE),
        ("num_key_value_heads", 10**9, MAX_SIZE),
        ("max_position_embeddings", MAX_CONTEXT_TOKENS + 1, MAX_CONTEXT_TOKENS),
    ],
)
def test_a_size_above_its_limit_is_one_line(
    cli: Run, tmp_path: Path, field: str, value: int, limit: int
) -> None:
    r = cli("estimate", "-m", _config(tmp_path, **{field: value}), "-g", "h100", "-c", "1K")
    assert r.code == 2 and r.out == ""
    assert r.err.endswith(f"{field}: must be at most {limit:,}, got {value:,}\n")
    assert len(r.err.splitlines()) == 1


def test_the_limits_hold_every_published_size() -> None:
    # Real sizes stay far below: Gemma 3's vocabulary is 262,208 and Llama 4 Scout's
    # context 10,485,760 tokens (max_position_embeddings), under 2^30 = 1,073,741,824.
    assert MAX_SIZE == 10**7 and MAX_CONTEXT_TOKENS == 2**30


def test_bytes_of_a_huge_model_are_exact_integers(cli: Run, tmp_path: Path) -> None:
    """Llama-3.1-8B's config at 10,000 layers, hidden 65,536 (512 heads of 128, 8 KV
    heads), intermediate 9,999,999, on 2 GPUs. Per GPU: MLP 10^4 x 3 x 65,536 x 9,999,999
    / 2 = 9,830,399,016,960,000 parameters; attention q, o 10^4 x 2 x 65,536^2 / 2 =
    42,949,672,960,000; k, v 10^4 x 2 x 65,536 x 1,024 / 2 = 671,088,640,000; LM head
    128,256 x 65,536 / 2 = 4,202,692,608; norms 10^4 x 2 x 65,536 + 65,536 = 1,310,785,536
    (replicated). 9,874,025,292,038,144 parameters x 2 bytes = 19,748,050,584,076,288
    bytes read a step: above 2^53, every digit exact."""
    path = _config(
        tmp_path,
        num_hidden_layers=10_000,
        hidden_size=65_536,
        num_attention_heads=512,
        intermediate_size=9_999_999,
    )
    r = cli("estimate", "-m", path, "-g", "h100", "--tp", "2", "-c", "1K", "--json")
    assert json.loads(r.out)["weight_bytes_per_step"] == 19_748_050_584_076_288


def test_a_tp_shard_is_an_integer_quotient() -> None:
    # ceil((2^60 + 1) / 2) = 2^59 + 1; the float quotient (2^60 + 1) / 2 rounds to 2^59.
    group = TensorGroup("mlp", 2**60 + 1, True, Sharding.SPLIT)
    assert group.params_per_gpu(2) == 2**59 + 1
