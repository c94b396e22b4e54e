"""Apple's chips (M1 Max, M2 Ultra, M3 Max, M3 Ultra, M4 Max) come in several memory
options, each its own preset with the bandwidth its chip variant has (Apple's specs). The
plain name means the entry memory (of the full chip where the M3 and M4 Max have two, as
the plain presets named it), as `gpus` shows; any preset GPU takes memory= and bandwidth=
overrides, said in the header; a GPU of numbers without family= names the profiles it
falls back to."""

from __future__ import annotations

import json

import pytest

from decodecalc.loading.catalog import Catalog
from decodecalc.units import GB, GIB
from tests.conftest import Run

# (preset, bandwidth, memory): Apple MacBook Pro (14-inch, Nov 2023) tech specs
# (support.apple.com/en-us/117736) for the M3 Max: the 14-core CPU / 30-core GPU variant at
# 300GB/s with 36GB or 96GB, the 16-core / 40-core one at 400GB/s with 48, 64 or 128GB; Apple
# newsroom (2024-10, M4 Pro and M4 Max) and MacBook Pro (2024) specs for the M4 Max: the
# 14-core / 32-core at 410GB/s with 36GB, the 16-core / 40-core at 546GB/s with 48, 64, 128GB.
OPTIONS = [
    ("m3-max-36gb", 300 * GB, 36 * GIB),
    ("m3-max-48gb", 400 * GB, 48 * GIB),
    ("m3-max-64gb", 400 * GB, 64 * GIB),
    ("m3-max-96gb", 300 * GB, 96 * GIB),
    ("m3-max-128gb", 400 * GB, 128 * GIB),
    ("m4-max-36gb", 410 * GB, 36 * GIB),
    ("m4-max-48gb", 546 * GB, 48 * GIB),
    ("m4-max-64gb", 546 * GB, 64 * GIB),
    ("m4-max-128gb", 546 * GB, 128 * GIB),
    # Apple newsroom (M1 Max 400GB/s; M2 Ultra 800GB/s; M3 Ultra 819GB/s) and the MacBook Pro
    # (2021) and Mac Studio (2023, 2025) specs for the memory options; the M1 Max 64 GB
    # figure is Metal's working set, 49,152 MiB, as llama.cpp logs it
    ("m1-max-32gb", 400 * GB, 32 * GIB),
    ("m1-max-64gb", 400 * GB, 49_152 * 2**20),
    ("m2-ultra-64gb", 800 * GB, 64 * GIB),
    ("m2-ultra-128gb", 800 * GB, 128 * GIB),
    ("m2-ultra-192gb", 800 * GB, 192 * GIB),
    ("m3-ultra-96gb", 819 * GB, 96 * GIB),
    ("m3-ultra-256gb", 819 * GB, 256 * GIB),
    ("m3-ultra-512gb", 819 * GB, 512 * GIB),
]


@pytest.mark.parametrize(("preset", "bandwidth", "memory"), OPTIONS)
def test_each_memory_option_is_a_preset(
    catalog: Catalog, preset: str, bandwidth: int, memory: int
) -> None:
    gpu = catalog.gpu(preset)
    assert (gpu.bandwidth_bytes_per_s, gpu.memory_bytes) == (bandwidth, memory)
    assert gpu.source.startswith("https://www.apple.com/") or "apple.com" in gpu.source


@pytest.mark.parametrize(
    ("plain", "meant"),
    [
        ("m1-max", "m1-max-32gb"),
        ("m2-ultra", "m2-ultra-64gb"),
        ("m3-max", "m3-max-48gb"),
        ("m3-ultra", "m3-ultra-96gb"),
        ("m4-max", "m4-max-48gb"),
    ],
)
def test_the_plain_name_is_the_full_chip_in_its_entry_memory(
    cli: Run, catalog: Catalog, plain: str, meant: str
) -> None:
    assert catalog.gpu(plain).id == meant
    listing = cli("gpus", "--json").out
    assert f'"{plain}"' in listing  # `gpus` lists it among the aliases of the one it means


def test_qwen3_30b_bf16_no_longer_fits_the_plain_m3_max(cli: Run) -> None:
    """30.5B parameters x 2 bytes = 61 GB of weights: more than a 48 GB M3 Max, less than
    the 128 GB option the plain name used to mean."""
    for gpu, fits in (("m3-max", False), ("m3-max-128gb", True)):
        out = cli("estimate", "-m", "qwen3-30b-a3b", "-g", gpu, "-c", "1K", "--json").out
        assert json.loads(out)["rows"][0]["fits"] is fits, gpu


@pytest.mark.parametrize(
    ("spec", "bandwidth", "memory"),
    [
        # the --gpu help's example, a real part: the Ryzen AI Max+ 395 on 64 GB boards keeps
        # its 256-bit LPDDR5X-8000 bus, 256 GB/s (AMD product page)
        ("strix-halo,memory=64GiB", 256 * GB, 64 * GIB),
        ("m3-max,memory=36GB", 400 * GB, 36 * GB),
        ("h100-sxm,bandwidth=2TB/s", 2000 * GB, 81559 * 2**20),  # the preset's memory kept
        ("m4-max,memory=64GiB,bandwidth=500GB/s", 500 * GB, 64 * GIB),
    ],
)
def test_any_preset_takes_memory_and_bandwidth_overrides(
    cli: Run, catalog: Catalog, spec: str, bandwidth: int, memory: int
) -> None:
    gpu = catalog.gpu(spec)
    assert (gpu.bandwidth_bytes_per_s, gpu.memory_bytes) == (bandwidth, memory)
    header = cli("estimate", "-m", "llama-3.1-8b", "-g", spec, "-c", "1K").out.splitlines()[0]
    assert f"with {spec.partition(',')[2].replace(',', ', ')}" in header


def test_an_override_other_than_memory_or_bandwidth_is_refused(cli: Run) -> None:
    result = cli("estimate", "-m", "llama-3.1-8b", "-g", "m3-max,bf16=1TFLOPS", "-c", "1K")
    assert result.code == 2 and "unknown field 'bf16'" in result.err


def test_numbers_without_family_name_the_profiles_they_fall_back_to(cli: Run) -> None:
    result = cli("estimate", "-m", "llama-3.1-8b", "-g", "bandwidth=1TB/s,memory=80GB", "-c", "1K")
    assert result.code == 0
    assert "without family=" in result.err
    assert "fall back to every engine profile" in result.err and "vllm" in result.err
    given = cli(
        "estimate", "-m", "llama-3.1-8b", "-g", "bandwidth=1TB/s,memory=80GB,family=apple",
        "-c", "1K",
    )  # fmt: skip
    assert "without family=" not in given.err


def test_compare_keeps_a_preset_s_overrides_with_it(cli: Run) -> None:
    result = cli(
        "compare", "-m", "llama-3.1-8b", "-g", "m3-max,memory=36GB,h100-sxm", "-c", "1K",
        "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    gpus = [r["gpu"] for r in json.loads(result.out)["rows"]]
    assert gpus == ["m3-max-48gb", "h100-sxm"]
