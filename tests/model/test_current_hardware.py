"""Current and announced accelerators: each preset's key figures against the datasheet
numbers typed here (the arithmetic in the comments), and the listing filters and aliases
through the CLI."""

from __future__ import annotations

import json

import pytest

from decodecalc.engine.profile import gpu_family
from decodecalc.loading.catalog import Catalog
from decodecalc.units import GB, TB
from tests.conftest import Run

T = 10**12  # one TFLOP/s

# gpu: (bandwidth B/s, {class: dense FLOP/s}, board power W or None, link, family)
DATASHEETS: dict[str, tuple[int, dict[str, int], float | None, str | None, str]] = {
    # HGX B300 over 8 GPUs: BF16 36 PF and FP8 72 PF sparse -> /2 dense /8 = 2.25 and 4.5 PF;
    # FP4 108 PF dense / 8 = 13.5 PF.
    "b300": (
        8 * TB,
        {"bf16": 2250 * T, "fp8": 4500 * T, "fp4": 13500 * T},
        1100,
        "nvlink5",
        "nvidia-datacenter",
    ),
    # GB300 NVL72 over 72 GPUs: BF16 360 PF and FP8 720 PF sparse -> 180 and 360 PF dense
    # -> 2.5 and 5 PF per GPU; FP4 1,080 PF dense / 72 = 15 PF; 576 TB/s / 72 = 8 TB/s.
    "gb300": (
        576 * TB // 72,
        {"bf16": 2500 * T, "fp8": 5000 * T, "fp4": 15000 * T},
        None,
        "nvl72",
        "nvidia-datacenter",
    ),
    # 188 SMs x 1,024 dense FP16 FLOP/clock x 2.617 GHz = 503.8 TFLOPS; FP8 x2, FP4 x4.
    # 28 Gbps x 512 bits / 8 = 1,792 GB/s.
    "rtx-pro-6000": (
        1792 * GB,
        {"bf16": 503_800 * 10**9, "fp8": 1_007_600 * 10**9, "fp4": 2_015_200 * 10**9},
        600,
        "pcie5",
        "nvidia-consumer",
    ),
    # H20: 4.0 TB/s, BF16 148 and FP8 296 TFLOPS dense, 400 W.
    "h20": (4 * TB, {"bf16": 148 * T, "fp8": 296 * T}, 400, "nvlink4", "nvidia-datacenter"),
    # MI350X: 8 TB/s; FP16 2,306.9, FP8 4,613.7, MXFP4 9,227.5 TFLOPS dense; 1,000 W.
    "mi350x": (
        8 * TB,
        {"bf16": 2_306_900 * 10**9, "fp8": 4_613_700 * 10**9, "fp4": 9_227_500 * 10**9},
        1000,
        "infinity-fabric-mi350",
        "amd-instinct",
    ),
    # TPU7x per chip: 7.37 TB/s; FP8 4,614 and BF16 2,307 TFLOPS.
    "tpu-v7": (7370 * GB, {"bf16": 2307 * T, "fp8": 4614 * T}, None, None, "other"),
    # M3 Ultra: 819 GB/s; Apple publishes no FLOP/s.
    "m3-ultra": (819 * GB, {}, None, None, "apple"),
    # Strix Halo: LPDDR5X-8000 x 256 bits / 8 = 256 GB/s; cTDP up to 120 W; an APU, not
    # an Instinct part, so no Instinct engine profile.
    "ryzen-ai-max-395": (256 * GB, {}, 120, None, "other"),
    # Announced: Rubin 22 TB/s HBM4, 50 PF NVFP4; MI400 series 19.6 TB/s, FP8 20 and FP4 40 PF.
    "rubin": (22 * TB, {"fp4": 50_000 * T}, None, "nvlink6-nvl72", "nvidia-datacenter"),
    "mi455x": (
        19_600 * GB,
        {"fp8": 20_000 * T, "fp4": 40_000 * T},
        None,
        "helios-ualink",
        "amd-instinct",
    ),
}

ANNOUNCED = {"rubin", "mi455x"}


@pytest.mark.parametrize("gpu", sorted(DATASHEETS))
def test_each_preset_matches_its_datasheet(catalog: Catalog, gpu: str) -> None:
    bandwidth, flops, power, link, family = DATASHEETS[gpu]
    g = catalog.gpu(gpu)
    assert g.bandwidth_bytes_per_s == bandwidth
    assert dict(g.flops_per_s) == flops
    assert g.power_w == power
    assert g.link == link
    assert gpu_family(g) == family
    assert g.source.startswith("https://")
    assert bool(flops) == bool(g.flops_source)


@pytest.mark.parametrize("gpu", sorted(DATASHEETS))
def test_only_announced_parts_say_so(catalog: Catalog, gpu: str) -> None:
    announced = catalog.gpu(gpu).announced
    assert bool(announced) == (gpu in ANNOUNCED)


def test_mi350_infinity_fabric_is_seven_links_one_way(catalog: Catalog) -> None:
    # 7 links x 153.6 GB/s = 1,075.2 GB/s both directions: 537.6 GB/s each way.
    link = catalog.link("infinity-fabric-mi350")
    assert link.bandwidth_bytes_per_s == 537_600_000_000
    assert link.gpus == 8
    assert catalog.gpu("mi355x").link == "infinity-fabric-mi350"


@pytest.mark.parametrize("link", ["nvlink6-nvl72", "helios-ualink"])
def test_announced_racks_join_72_gpus_at_3_6_tb_s(catalog: Catalog, link: str) -> None:
    # 3.6 TB/s per GPU both directions (Vera Rubin NVL72, Helios): 1.8 TB/s each way.
    found = catalog.link(link)
    assert (found.bandwidth_bytes_per_s, found.gpus) == (1800 * GB, 72)


def test_mi300x_has_a_public_price(catalog: Catalog) -> None:
    assert dict(catalog.price_list("vultr").prices)["mi300x"] == 1.85


def test_an_announced_gpu_is_noted_where_it_is_used(cli: Run) -> None:
    r = cli("estimate", "-m", "llama-3.1-8b", "-g", "rubin", "-c", "1K", "--json")
    assert r.code == 0, r.err
    codes = [n["code"] for n in json.loads(r.out)["notes"]]
    assert "announced-gpu" in codes
    shipping = cli("estimate", "-m", "llama-3.1-8b", "-g", "b300", "-c", "1K", "--json")
    assert "announced-gpu" not in [n["code"] for n in json.loads(shipping.out)["notes"]]


class TestListings:
    def test_gpus_show_announced_parts_and_aliases(self, cli: Run) -> None:
        r = cli("gpus", "--json")
        assert r.code == 0, r.err
        rows = {g["id"]: g for g in json.loads(r.out)["gpus"]}
        assert rows["rubin"]["announced"].startswith("NVIDIA GTC 2025")
        assert rows["b300"]["announced"] is None
        assert "hgx-b300" in rows["b300"]["aliases"]

    def test_the_table_has_an_aliases_column(self, cli: Run) -> None:
        gpus = cli("gpus", "-f", "markdown")
        assert "| Aliases |" in gpus.out.splitlines()[0]
        assert "ironwood" in gpus.out
        models = cli("models", "-f", "markdown")
        assert "| Aliases |" in models.out.splitlines()[0]
        assert "deepseek-ai/DeepSeek-R1" in models.out

    def test_vendor_filter_is_case_insensitive(self, cli: Run) -> None:
        r = cli("gpus", "--vendor", "amd", "--json")
        assert r.code == 0, r.err
        vendors = {g["vendor"] for g in json.loads(r.out)["gpus"]}
        assert vendors == {"AMD"}

    def test_vendor_and_family_filters_combine(self, cli: Run) -> None:
        r = cli("gpus", "--vendor", "AMD", "--family", "other", "--json")
        assert [g["id"] for g in json.loads(r.out)["gpus"]] == ["ryzen-ai-max-395"]

    def test_model_family_filter(self, cli: Run) -> None:
        r = cli("models", "--family", "qwen3_moe", "--json")
        ids = [m["id"] for m in json.loads(r.out)["models"]]
        assert ids and all(m.startswith("qwen3-") for m in ids)

    @pytest.mark.parametrize(
        ("args", "hint"),
        [
            (("gpus", "--vendor", "nvdia"), "did you mean 'NVIDIA'?"),
            (("gpus", "--family", "nvidia-datacentre"), "did you mean 'nvidia-datacenter'"),
            (("models", "--family", "deepsek_v3"), "did you mean 'deepseek_v3'"),
        ],
    )
    def test_a_bad_filter_value_gets_a_did_you_mean(
        self, cli: Run, args: tuple[str, ...], hint: str
    ) -> None:
        r = cli(*args)
        assert r.code == 2
        assert r.out == ""
        assert len(r.err.strip().splitlines()) == 1
        assert hint in r.err
