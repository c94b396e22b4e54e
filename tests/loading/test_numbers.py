"""Models and GPUs given by numbers (--model 'layers=80,...', --gpu 'bandwidth=...'): the
numbers of a preset give its figures exactly, counts follow by hand, and bad numbers get
one line and exit 2."""

from __future__ import annotations

import json
from typing import Any

import pytest

from decodecalc.loading.catalog import Catalog
from decodecalc.loading.numbers import split_items
from tests.conftest import Run

# Llama-3.1-70B's config.json (huggingface.co/meta-llama/Llama-3.1-70B) as numbers.
LLAMA_70B = (
    "layers=80,hidden=8192,heads=64,kv_heads=8,head_dim=128,intermediate=28672,"
    "vocab=128256,max_context=131072"
)
# Mixtral-8x7B-v0.1's config.json: head_dim is hidden / heads = 128, as config.json leaves it.
MIXTRAL = (
    "layers=32,hidden=4096,heads=32,kv_heads=8,experts=8,experts_per_token=2,"
    "expert_intermediate=14336,vocab=32000,max_context=32768"
)
# DeepSeek-V3's config.json: MLA (kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128,
# q_lora_rank 1536), 3 dense layers first, 256 routed + 1 shared expert, noaux_tc routing.
DEEPSEEK_V3 = (
    "layers=61,hidden=7168,heads=128,head_dim=128,kv_lora_rank=512,rope_head_dim=64,"
    "q_lora_rank=1536,intermediate=18432,experts=256,experts_per_token=8,"
    "expert_intermediate=2048,shared_experts=1,dense_layers=3,router_bias=true,"
    "vocab=129280,max_context=163840"
)
# The h100-sxm preset's datasheet figures as numbers.
H100 = (
    "bandwidth=3.35TB/s,memory=81559MiB,bf16=989.4TFLOP/s,fp8=1978.9TFLOPS,link=nvlink4,"
    "family=nvidia-datacenter,power=700W"
)
ESTIMATE = ("-c", "1K,32K,128K", "--batch", "8", "--json")


def figures(doc: Any) -> Any:
    """A JSON document without what names the inputs (ids, sources, notes): the figures."""
    if isinstance(doc, dict):
        return {
            k: figures(v)
            for k, v in doc.items()
            if k not in ("model", "gpu", "notes") and not k.endswith("_source")
        }
    if isinstance(doc, list):
        return [figures(v) for v in doc]
    return doc


@pytest.mark.parametrize(
    ("numbers", "preset", "extra"),
    [
        (LLAMA_70B, "llama-3.1-70b", ("--tp", "4")),
        (MIXTRAL, "mixtral-8x7b", ("--tp", "2")),
        # the preset's default is its checkpoint's FP8 recipe; numbers carry no recipe
        (DEEPSEEK_V3, "deepseek-v3", ("--tp", "8", "-w", "fp8-block128")),
    ],
)
def test_numbers_give_the_preset_figures(
    cli: Run, numbers: str, preset: str, extra: tuple[str, ...]
) -> None:
    given = cli("estimate", "-m", numbers, "-g", "h100-sxm", *extra, *ESTIMATE)
    shipped = cli("estimate", "-m", preset, "-g", "h100-sxm", *extra, *ESTIMATE)
    assert given.code == shipped.code == 0, given.err
    assert figures(json.loads(given.out)) == figures(json.loads(shipped.out))


@pytest.mark.parametrize(
    ("numbers", "preset"),
    [(LLAMA_70B, "llama-3.1-70b"), (MIXTRAL, "mixtral-8x7b"), (DEEPSEEK_V3, "deepseek-v3")],
)
def test_numbers_build_the_preset_layers(catalog: Catalog, numbers: str, preset: str) -> None:
    given, shipped = catalog.model(numbers), catalog.model(preset)
    assert given.layers == shipped.layers
    assert given.total_params() == shipped.total_params()


def test_llama_numbers_count_by_hand(catalog: Catalog) -> None:
    model = catalog.model(LLAMA_70B)
    # embedding and LM head 2 x 128,256 x 8,192 = 2,101,346,304; per layer q,o 2 x 8192^2
    # = 134,217,728, k,v 2 x 8192 x 1024 = 16,777,216, MLP 3 x 8192 x 28672 = 704,643,072,
    # norms 16,384: 855,654,400 x 80 = 68,452,352,000; final norm 8,192. The sum is the
    # safetensors count Hugging Face shows for meta-llama/Llama-3.1-70B: 70,553,706,496.
    assert model.total_params() == 70_553_706_496
    assert model.id.startswith("numbers:")


@pytest.mark.parametrize(
    "flags", [("--tp", "1"), ("--tp", "2", "--engine", "roofline")], ids=["tp1", "tp2-roofline"]
)
def test_gpu_numbers_give_the_preset_figures(cli: Run, flags: tuple[str, ...]) -> None:
    """The preset's figures from its numbers. Not an engine's step at TP 2: the preset's
    kernel tables (an engine's measured all-reduce, presets/kernels) belong to the preset,
    and a GPU given by numbers has none, so its all-reduces take the link's figures."""
    given = cli("estimate", "-m", "llama-3.1-70b", "-g", H100, *flags, *ESTIMATE)
    shipped = cli("estimate", "-m", "llama-3.1-70b", "-g", "h100-sxm", *flags, *ESTIMATE)
    assert given.code == shipped.code == 0, given.err
    assert figures(json.loads(given.out)) == figures(json.loads(shipped.out))


def test_gpu_numbers_by_hand(catalog: Catalog) -> None:
    gpu = catalog.gpu("bandwidth=3.35TB/s,memory=80GiB,bf16=989TFLOPS,name=mine")
    assert gpu.id == "numbers:mine"
    assert gpu.bandwidth_bytes_per_s == 3_350_000_000_000
    assert gpu.memory_bytes == 80 * 2**30
    assert gpu.flops_per_s == (("bf16", 989 * 10**12),)


def test_derived_figures_say_they_come_from_numbers(cli: Run) -> None:
    result = cli("estimate", "-m", "layers=2,hidden=64,heads=4,intermediate=128,vocab=100",
                 "-g", "bandwidth=1TB/s,memory=8GB,name=toy", "-c", "1K", "--json")  # fmt: skip
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["inputs"]["model"].startswith("numbers:")
    assert doc["inputs"]["gpu"] == "numbers:toy"
    messages = [n["message"] for n in doc["notes"] if n["code"] == "from-numbers"]
    assert len(messages) == 2
    assert "131,072 tokens assumed" in messages[0]  # no max_context given
    # 2 layers x 2 (K, V) x 4 heads x 16 (64 / 4) x 2 bytes = 512 bytes of KV per token
    assert doc["kv_bytes_per_token"] == 512


def test_short_form_dense(catalog: Catalog) -> None:
    model = catalog.model("params=70.6B,kv_bytes_per_token=320KiB,layers=80")
    # 80 stand-in layers of 2 x 8 KV heads x 128 dims (320 KiB / (2 bytes x 80 x 2 x 8)):
    # 2 x 8 x 128 x 80 = 163,840 elements, 327,680 bytes at 16 bits, as given.
    assert sum(m.kv_elements_per_token(1) for m in model.mixers()) == 327_680 // 2
    # Widths round the dense MLP to 3 x 80 parameters at most: within a millionth.
    assert model.total_params() == pytest.approx(70.6e9, rel=1e-6)
    assert model.active_params() == model.total_params()
    assert model.max_context_tokens == 131_072
    assert "approximate" in model.notes


def test_short_form_moe_reads_more_experts_in_a_batch(catalog: Catalog) -> None:
    model = catalog.model(
        "params=671B,active_params=37B,experts=256,experts_per_token=8,layers=61,"
        "kv_heads=1,kv_bytes_per_token=70272"
    )
    assert model.total_params() == pytest.approx(671e9, rel=1e-6)
    assert model.active_params() == pytest.approx(37e9, rel=1e-6)
    # One token reads the active parameters; 1,024 tokens miss an expert with probability
    # (1 - 8/256)^1024 = e^-32.5, so they read every parameter.
    assert float(model.streamed_params_per_gpu(1, 1)) == pytest.approx(37e9, rel=1e-6)
    assert float(model.streamed_params_per_gpu(1, 1024)) == pytest.approx(671e9, rel=1e-6)
    # kv_heads=1: the whole cache on every TP GPU, as MLA keeps it
    assert sum(m.kv_elements_per_token(8) for m in model.mixers()) == 70_272 // 2


def test_short_form_without_experts_holds_but_never_reads_the_rest(catalog: Catalog) -> None:
    model = catalog.model("params=100B,active_params=20B,kv_bytes_per_token=64KiB,layers=8")
    assert model.total_params() == pytest.approx(100e9, rel=1e-6)
    for batch in (1, 64):
        assert float(model.streamed_params_per_gpu(1, batch)) == pytest.approx(20e9, rel=1e-6)


def test_compare_keeps_a_numbers_spec_whole(cli: Run) -> None:
    models = f"llama-3.1-70b,{LLAMA_70B},name=a,{MIXTRAL},name=b"
    result = cli("compare", "-m", models, "-g", f"h100-sxm,{H100}", "-c", "8K", "--json")
    assert result.code == 0, result.err
    rows = json.loads(result.out)["rows"]
    pairs = {(r["model"], r["gpu"]) for r in rows}
    assert {m for m, _ in pairs} == {"llama-3.1-70b", "numbers:a", "numbers:b"}
    assert len(pairs) == 6


@pytest.mark.parametrize(
    ("text", "items"),
    [
        ("a,b", ["a", "b"]),
        ("x=1,y=2", ["x=1,y=2"]),
        ("h100,x=1,y=2,x=3", ["h100", "x=1,y=2", "x=3"]),
        ("x=1,h100,y=2", ["x=1", "h100", "y=2"]),
        # a preset's memory= or bandwidth= is its own (issue 32), as -g reads it alone
        ("m3-max,memory=36GB,h100", ["m3-max,memory=36GB", "h100"]),
        ("h100,bandwidth=2TB/s,memory=64GB", ["h100,bandwidth=2TB/s,memory=64GB"]),
        (
            "h100,bandwidth=2TB/s,memory=64GB,bf16=1PFLOPS",
            ["h100", "bandwidth=2TB/s,memory=64GB,bf16=1PFLOPS"],
        ),
    ],
)
def test_split_items(text: str, items: list[str]) -> None:
    assert split_items(text) == items


BAD_MODELS = [
    ("layers=80,hiden=8192", "unknown field 'hiden'; did you mean 'hidden'"),
    ("layers=80,hidden=8192", "missing heads, vocab, intermediate"),
    ("layers=8.5,hidden=64,heads=4,vocab=9,intermediate=8", "layers=8.5 is not a whole number"),
    ("layers=2,hidden=64,heads=4,kv_heads=3,vocab=9,intermediate=8", "kv_heads=3 does not divide"),
    ("layers=2,hidden=64,heads=4,vocab=9,intermediate=8,experts_per_token=2", "need experts="),
    ("layers=2,hidden=64,heads=4,vocab=9,intermediate=8,layers=3", "layers is given twice"),
    ("layers=2,hidden=64,heads=4,vocab=9,intermediate=8,tied=maybe", "not true or false"),
    ("layers=2,hidden=64,heads=4,vocab=9,intermediate", "'intermediate' is not FIELD=VALUE"),
    ("layers=2,hidden=64,heads=4,vocab=9,experts=8,experts_per_token=2", "expert_intermediate"),
    ("layers=2,hidden=64,heads=4,vocab=9,intermediate=8,max_context=lots", "max_context"),
    # as config.json's max_position_embeddings: 0 ("must be at least 1, got 0")
    (
        "layers=2,hidden=64,heads=4,vocab=9,intermediate=8,max_context=0",
        "max_context=0 must be at least 1 token",
    ),
    ("params=70B", "missing kv_bytes_per_token"),
    ("params=70B,kv_bytes_per_token=1KiB,hidden=8192", "the short form takes params"),
    ("params=7B,active_params=8B,kv_bytes_per_token=1KiB", "is more than params"),
    ("params=seventy,kv_bytes_per_token=1KiB", "not a parameter count"),
    ("params=8B,kv_bytes_per_token=1KiB,experts=8", "missing experts_per_token"),
]
BAD_GPUS = [
    ("bandwidth=3.35TB/s", "missing memory"),
    ("bandwidth=3.35,memory=80GiB", "needs a unit per second"),
    ("bandwidth=3.35TB/s,memory=80GiB,bf15=1TFLOPS", "did you mean 'bf16'"),
    ("bandwidth=3.35TB/s,memory=80GiB,int8=1979TFLOPS", "give bf16= instead"),
    ("bandwidth=3.35TB/s,memory=80GiB,family=nvidia", "family=nvidia: expected one of"),
    ("bandwidth=3.35TB/s,memory=80GiB,link=nvlnk4", "unknown link 'nvlnk4'"),
]


@pytest.mark.parametrize(("spec", "message"), BAD_MODELS)
def test_bad_model_numbers_get_one_line(cli: Run, spec: str, message: str) -> None:
    result = cli("estimate", "-m", spec, "-g", "h100-sxm", "-c", "1K")
    assert result.code == 2
    assert result.err.startswith("decodecalc: error: ") and result.err.count("\n") == 1
    assert message in result.err


@pytest.mark.parametrize(("spec", "message"), BAD_GPUS)
def test_bad_gpu_numbers_get_one_line(cli: Run, spec: str, message: str) -> None:
    result = cli("estimate", "-m", "llama-3.1-8b", "-g", spec, "-c", "1K")
    assert result.code == 2
    assert result.err.startswith("decodecalc: error: ") and result.err.count("\n") == 1
    assert message in result.err
