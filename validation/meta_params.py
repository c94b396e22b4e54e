"""Count each config.json's parameters with transformers on PyTorch's meta device and
compare with decodecalc's count of the same file.

A development check, never needed at run time or by the tests (which hold the counts it
found): it needs torch and transformers 5 (``pip install torch 'transformers>=5'``).

    python validation/meta_params.py tests/fixtures/configs/*.json

For each file: the model_type, transformers' count of the causal-LM class (or, for a
multimodal wrapper, the image-text-to-text class, which holds the vision tower),
decodecalc's total and the difference. A family whose modeling code is not in
transformers (``auto_map`` remote code) is reported as such and skipped: its count comes
from the checkpoint's published safetensors index instead. ``--text`` counts a
wrapper's text model alone (the causal-LM class), as transformers' ``AutoModelForCausalLM``
builds it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any


def transformers_count(config: dict[str, Any], text_only: bool = False) -> int | None:
    """Parameters of the model transformers builds from ``config`` (shared tensors once),
    or None where transformers has no modeling code for its model_type."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText
    from transformers.models.auto import modeling_auto

    model_type = config["model_type"]
    causal = modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    wrapped = modeling_auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
    if model_type not in causal and model_type not in wrapped:
        return None
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "config.json").write_text(json.dumps(config))
        loaded = AutoConfig.from_pretrained(folder)
    if model_type == "dbrx" and not hasattr(loaded.attn_config, "rope_theta"):
        # transformers 5.24's DbrxAttention still reads attn_config.rope_theta, which its
        # DbrxAttentionConfig no longer keeps (the base is in rope_parameters): no shape.
        loaded.attn_config.rope_theta = loaded.rope_parameters["rope_theta"]
    auto = AutoModelForCausalLM
    if model_type in wrapped and not (text_only and model_type in causal):
        auto = AutoModelForImageTextToText  # type: ignore[assignment]
    with torch.device("meta"):
        model = auto.from_config(loaded)  # type: ignore[no-untyped-call]
    # What the checkpoint holds: parameters and persistent buffers (DeepSeek-V3's router
    # score-correction bias is a buffer in transformers 5, a tensor in the safetensors),
    # each shared (tied) tensor once.
    tensors = {
        id(t): t
        for name, t in model.state_dict(keep_vars=True).items()
        if name.rsplit(".", 1)[-1] not in COMPUTED_BUFFERS
    }
    return int(sum(t.numel() for t in tensors.values()))


COMPUTED_BUFFERS = frozenset({"slope_rate", "query_decay", "key_decay", "diagonal_decay"})
"""Persistent buffers transformers computes itself and no checkpoint ships: MiniMax's
lightning-attention decay constants (from the head count and ``block_size``)."""


def decodecalc_count(path: Path) -> int:
    from decodecalc.loading.catalog import Catalog

    return Catalog().model(str(path)).total_params()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="+", type=Path)
    parser.add_argument("--text", action="store_true", help="a wrapper's text model alone")
    args = parser.parse_args(argv)
    print(f"{'file':40} {'model_type':20} {'transformers':>16} {'decodecalc':>16} {'diff':>14}")
    for path in args.configs:
        config = json.loads(path.read_text())
        try:
            theirs = transformers_count(config, args.text)
        except Exception as error:  # report and go on: one family's failure is a row
            print(f"{path.name:40} {config.get('model_type', '?'):20} failed: {error}")
            continue
        try:
            ours: int | str = decodecalc_count(path)
        except Exception as error:
            ours = f"refused: {error}"
        shown = "remote code" if theirs is None else f"{theirs:,}"
        diff = f"{ours - theirs:+,}" if isinstance(ours, int) and theirs is not None else ""
        mine = f"{ours:,}" if isinstance(ours, int) else ours
        print(f"{path.name:40} {config['model_type']:20} {shown:>16} {mine:>16} {diff:>14}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
