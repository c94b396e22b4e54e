"""GPU capacity is what the device reports, not the marketing figure.

An "80 GB" H100 exposes 81,559 MiB = 79.65 GiB in nvidia-smi, and a memory fit against
80 GiB promises room the card does not have. Each figure below was typed from the public
tool output cited next to it (nvidia-smi, rocm-smi, hl-smi, Metal, XLA), independently of
the presets; where no such output could be found the preset keeps the nominal figure and
says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from decodecalc.loading.catalog import Catalog, presets_dir

MIB = 2**20
GIB = 2**30
GB = 10**9

# preset: (bytes, the figure as the tool printed it, where it was seen).
# MI300X: 206,141,652,992 B = 196,592 MiB; TPU v6e: 33,550,237,696 B = 31,996 MiB;
# MI250X GCD: 68,702,699,520 B = 65,520 MiB.
REPORTED: dict[str, tuple[int, str, str]] = {
    "a100-40gb": (
        40_960 * MIB,
        "40960MiB",
        "nvidia-smi, github.com/bottlerocket-os/bottlerocket-core-kit/pull/834",
    ),
    "a100-80gb": (81_920 * MIB, "81920MiB", "nvidia-smi, github.com/allenai/PeerRead/issues/40"),
    "b200": (183_359 * MIB, "183359MiB", "nvidia-smi, github.com/NVIDIA/TensorRT-LLM/issues/10278"),
    # 275,040 MiB x 1,048,576 = 288,403,783,680 bytes: the "288 GB" of HBM3e.
    "b300": (275_040 * MIB, "275040 MiB", "nvidia-smi listings of B300 SXM6 AC in public notes"),
    "h20": (97_871 * MIB, "97871 MiB", "nvidia-smi listings of H20 in public experiment logs"),
    "rtx-pro-6000": (
        97_887 * MIB,
        "97887 MiB",
        "nvidia-smi listings of RTX PRO 6000 Blackwell Server Edition in public notes",
    ),
    "gaudi3": (
        131_072 * MIB,
        "131072 MiB",
        "hl-smi example in lablup/all-smi src/device/hlsmi/parser.rs",
    ),
    "h100-nvl": (
        95_830 * MIB,
        "95830MiB",
        "nvidia-smi, github.com/NVIDIA/gpu-admin-tools/issues/4",
    ),
    "h100-sxm": (81_559 * MIB, "81559MiB", "nvidia-smi, github.com/NVIDIA/nccl/issues/1264"),
    "h200": (143_771 * MIB, "143771MiB", "nvidia-smi, github.com/sgl-project/sglang/issues/3196"),
    "l4": (
        23_034 * MIB,
        "23034MiB",
        "nvidia-smi totals, github.com/modal-labs/modal-client/pull/2797",
    ),
    "l40s": (
        46_068 * MIB,
        "46068 MiB",
        "nvidia-smi, github.com/akash-network/provider-configs/pull/99",
    ),
    "m1-max-64gb": (
        49_152 * MIB,
        "49152.00 MiB",
        "Metal working set, github.com/ggml-org/llama.cpp/issues/1870",
    ),
    "mi250x-gcd": (
        68_702_699_520,
        "68702699520",
        "HIP runtime, github.com/csc-training/portable-gpu-programming",
    ),
    "mi300x": (
        206_141_652_992,
        "206141652992",
        "rocm-smi, github.com/ROCm/legacy-rocm-build/issues/4750",
    ),
    "rtx-3090": (
        24_576 * MIB,
        "24576MiB",
        "nvidia-smi, github.com/noonghunna/club-3090/issues/1128",
    ),
    "rtx-4090": (24_564 * MIB, "24564MiB", "nvidia-smi, github.com/RLinf/RLinf/issues/255"),
    "rtx-5090": (
        32_607 * MIB,
        "32607MiB",
        "nvidia-smi, github.com/vllm-project/vllm-omni/issues/919",
    ),
    "rtx-a6000": (
        49_140 * MIB,
        "49140MiB",
        "nvidia-smi, github.com/ModelCloud/GPTQModel/issues/2824",
    ),
    "tpu-v6e": (
        33_550_237_696,
        "33550237696",
        "XLA bytes_limit, github.com/vllm-project/vllm/pull/16211",
    ),
}

# preset: (bytes, the datasheet figure kept because no device-reported one was found)
NOMINAL: dict[str, tuple[int, str]] = {
    "dgx-spark": (128 * GIB, "NVIDIA DGX Spark page; nvidia-smi reports Not Supported"),
    "gb200": (186 * GIB, "NVIDIA GB200 NVL72 datasheet"),
    "gb300": (288 * GB, "NVIDIA GB300 NVL72 datasheet: 288 GB HBM3e per GPU"),
    "mi350x": (288 * GIB, "AMD MI350X data sheet"),
    "mi455x": (432 * GB, "AMD Advancing AI 2025: 432 GB HBM4 (announced)"),
    "m3-ultra-96gb": (96 * GIB, "Apple Mac Studio (2025) specs: 96GB"),
    "m3-ultra-256gb": (256 * GIB, "Apple Mac Studio (2025) specs: configurable to 256GB"),
    "m3-ultra-512gb": (512 * GIB, "Apple newsroom: up to 512 GB"),
    "m1-max-32gb": (32 * GIB, "Apple MacBook Pro (2021) specs: 32GB"),
    "m2-ultra-64gb": (64 * GIB, "Apple Mac Studio (2023) specs: 64GB"),
    "m2-ultra-128gb": (128 * GIB, "Apple Mac Studio (2023) specs: configurable to 128GB"),
    "rubin": (288 * GB, "NVIDIA GTC 2025 / CES 2026: 288 GB HBM4 (announced)"),
    "ryzen-ai-max-395": (128 * GIB, "AMD product page: up to 128 GB"),
    "tpu-v7": (192 * GIB, "Google Cloud TPU7x documentation: 192 GiB"),
    "h100-pcie": (80 * GIB, "NVIDIA H100 datasheet"),
    "m2-ultra-192gb": (192 * GIB, "Apple newsroom: up to 192GB"),
    # Apple's memory options, each its own preset (issue 32): MacBook Pro (14-inch, Nov 2023)
    # tech specs for the M3 Max, Apple newsroom and MacBook Pro (2024) specs for the M4 Max
    "m3-max-36gb": (36 * GIB, "Apple support page: M3 Max 14-core CPU, 30-core GPU, 36GB"),
    "m3-max-48gb": (48 * GIB, "Apple support page: M3 Max 16-core CPU, 40-core GPU, 48GB"),
    "m3-max-64gb": (64 * GIB, "Apple support page: configurable to 64GB"),
    "m3-max-96gb": (96 * GIB, "Apple support page: 30-core GPU configurable to 96GB"),
    "m3-max-128gb": (128 * GIB, "Apple support page: configurable to 128GB"),
    "m4-max-36gb": (36 * GIB, "Apple newsroom: M4 Max 14-core CPU, 32-core GPU, 36GB"),
    "m4-max-48gb": (48 * GIB, "Apple MacBook Pro specs: M4 Max 40-core GPU, 48GB"),
    "m4-max-64gb": (64 * GIB, "Apple MacBook Pro specs: configurable to 64GB"),
    "m4-max-128gb": (128 * GIB, "Apple newsroom: up to 128GB"),
    "mi325x": (256 * GIB, "AMD MI325X data sheet"),
    "mi355x": (288 * GIB, "AMD MI355X data sheet"),
    "rtx-4080": (16 * GIB, "NVIDIA RTX 4080 page"),
    "rtx-6000-ada": (48 * GIB, "NVIDIA RTX 6000 Ada datasheet"),
    "tpu-v5e": (16 * GIB, "Google Cloud TPU v5e documentation"),
    "tpu-v5p": (95 * GIB, "Google Cloud TPU v5p documentation"),
}

GPU_FILES = sorted((presets_dir() / "gpus").glob("*.yaml"))


def _preset(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_every_gpu_preset_has_a_checked_capacity() -> None:
    assert not set(REPORTED) & set(NOMINAL)
    assert {p.stem for p in GPU_FILES} == set(REPORTED) | set(NOMINAL)


CAPACITY = {gpu: row[0] for gpu, row in (*REPORTED.items(), *NOMINAL.items())}


@pytest.mark.parametrize(("gpu", "expected"), sorted(CAPACITY.items()))
def test_capacity_is_the_cited_figure(catalog: Catalog, gpu: str, expected: int) -> None:
    assert catalog.gpu(gpu).memory_bytes == expected


def test_h100_is_79_65_gib_not_80() -> None:
    # 81,559 MiB / 1,024 = 79.647 GiB; 81,559 x 1,048,576 = 85,520,809,984 bytes = 85.52 GB.
    assert REPORTED["h100-sxm"][0] == 85_520_809_984


@pytest.mark.parametrize("path", GPU_FILES, ids=lambda p: p.stem)
def test_every_gpu_preset_names_the_source_of_its_capacity(path: Path) -> None:
    data = _preset(path)
    source = data.get("memory_source")
    assert isinstance(source, str) and source.strip(), f"{path.name}: no memory_source"
    nominal = path.stem in NOMINAL
    # A nominal capacity says so where users read it (notes) and where it is sourced.
    assert source.startswith("nominal") == nominal
    if nominal:
        assert "nominal" in str(data.get("notes", ""))
    else:
        # The figure as the tool printed it is quoted in the preset's source text.
        assert REPORTED[path.stem][1] in source
