"""vLLM serve configs (the YAML file of ``vllm serve --config``) as `decodecalc check` reads them.

vLLM turns each key into a flag: ``max-num-seqs: 16`` is ``--max-num-seqs 16``, underscores
count as dashes, ``a.b: x`` sets field b of the JSON argument a, ``true`` adds a bare flag
and ``false`` leaves the flag out. A key that is no vLLM argument is refused here with the
nearest real one: ignored, it would let vLLM's default stand in for the value the user
meant, and the check would judge a configuration nobody wrote. (vLLM's parser would even
take an unambiguous prefix such as ``max-num-seq``; a config checked here says what it means.)

Arguments that set what decodecalc computes are read; arguments that change decoding in a
way decodecalc does not model are refused with the reason, or read into a note; every other
argument (ports, logging, tokenizers, prefix caching, ...) does not change the bytes a
decode step streams and is accepted without effect.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from decodecalc.checks import settings as read
from decodecalc.checks.settings import Problems, Setting, Settings
from decodecalc.checks.workloads import vllm_speculative
from decodecalc.engine.profile import ROOFLINE
from decodecalc.errors import InputError
from decodecalc.loading.datafile import Document, is_file
from decodecalc.loading.fields import suggest
from decodecalc.model.hardware import GpuSpec
from decodecalc.notes import Note
from decodecalc.paths import expand_user
from decodecalc.record import record

VLLM_VERSION = "0.19.1"
VLLM_ENGINE = "vllm"
"""The engine profile a vLLM serve config implies unless its side file names another."""

VLLM_SERVE_ARGS: tuple[str, ...] = (
    "additional-config",
    "aggregate-engine-logging",
    "all2all-backend",
    "allow-credentials",
    "allow-deprecated-quantization",
    "allowed-headers",
    "allowed-local-media-path",
    "allowed-media-domains",
    "allowed-methods",
    "allowed-origins",
    "api-key",
    "api-server-count",
    "async-scheduling",
    "attention-backend",
    "attention-config",
    "block-size",
    "calculate-kv-scales",
    "chat-template",
    "chat-template-content-format",
    "code-revision",
    "collect-detailed-traces",
    "compilation-config",
    "config",
    "config-format",
    "convert",
    "cp-kv-cache-interleave-size",
    "cpu-offload-gb",
    "cpu-offload-params",
    "cudagraph-capture-sizes",
    "cudagraph-metrics",
    "data-parallel-address",
    "data-parallel-backend",
    "data-parallel-external-lb",
    "data-parallel-hybrid-lb",
    "data-parallel-rank",
    "data-parallel-rpc-port",
    "data-parallel-size",
    "data-parallel-size-local",
    "data-parallel-start-rank",
    "dbo-decode-token-threshold",
    "dbo-prefill-token-threshold",
    "dcp-comm-backend",
    "dcp-kv-cache-interleave-size",
    "decode-context-parallel-size",
    "default-chat-template-kwargs",
    "default-mm-loras",
    "disable-access-log-for-endpoints",
    "disable-cascade-attn",
    "disable-chunked-mm-input",
    "disable-custom-all-reduce",
    "disable-fastapi-docs",
    "disable-hybrid-kv-cache-manager",
    "disable-log-stats",
    "disable-nccl-for-dp-synchronization",
    "disable-sliding-window",
    "disable-uvicorn-access-log",
    "distributed-executor-backend",
    "distributed-timeout-seconds",
    "download-dir",
    "dtype",
    "ec-transfer-config",
    "enable-auto-tool-choice",
    "enable-chunked-prefill",
    "enable-dbo",
    "enable-elastic-ep",
    "enable-ep-weight-filter",
    "enable-eplb",
    "enable-expert-parallel",
    "enable-flashinfer-autotune",
    "enable-force-include-usage",
    "enable-layerwise-nvtx-tracing",
    "enable-log-deltas",
    "enable-log-outputs",
    "enable-log-requests",
    "enable-logging-iteration-details",
    "enable-lora",
    "enable-mfu-metrics",
    "enable-mm-embeds",
    "enable-offline-docs",
    "enable-prefix-caching",
    "enable-prompt-embeds",
    "enable-prompt-tokens-details",
    "enable-request-id-headers",
    "enable-return-routed-experts",
    "enable-server-load-tracking",
    "enable-sleep-mode",
    "enable-ssl-refresh",
    "enable-tokenizer-info-endpoint",
    "enable-tower-connector-lora",
    "enforce-eager",
    "eplb-config",
    "exclude-tools-when-tool-choice-none",
    "expert-placement-strategy",
    "fail-on-environ-validation",
    "fully-sharded-loras",
    "gdn-prefill-backend",
    "generation-config",
    "gpu-memory-utilization",
    "grpc",
    "h11-max-header-count",
    "h11-max-incomplete-event-size",
    "headless",
    "hf-config-path",
    "hf-overrides",
    "hf-token",
    "host",
    "ignore-patterns",
    "interleave-mm-strings",
    "io-processor-plugin",
    "kernel-config",
    "kv-cache-dtype",
    "kv-cache-dtype-skip-layers",
    "kv-cache-memory-bytes",
    "kv-cache-metrics",
    "kv-cache-metrics-sample",
    "kv-events-config",
    "kv-offloading-backend",
    "kv-offloading-size",
    "kv-sharing-fast-prefill",
    "kv-transfer-config",
    "language-model-only",
    "limit-mm-per-prompt",
    "load-format",
    "log-config-file",
    "log-error-stack",
    "logits-processors",
    "logprobs-mode",
    "long-prefill-token-threshold",
    "lora-dtype",
    "lora-modules",
    "lora-target-modules",
    "mamba-block-size",
    "mamba-cache-dtype",
    "mamba-cache-mode",
    "mamba-ssm-cache-dtype",
    "master-addr",
    "master-port",
    "max-cpu-loras",
    "max-cudagraph-capture-size",
    "max-log-len",
    "max-logprobs",
    "max-long-partial-prefills",
    "max-lora-rank",
    "max-loras",
    "max-model-len",
    "max-num-batched-tokens",
    "max-num-partial-prefills",
    "max-num-seqs",
    "max-parallel-loading-workers",
    "media-io-kwargs",
    "middleware",
    "mm-encoder-attn-backend",
    "mm-encoder-only",
    "mm-encoder-tp-mode",
    "mm-processor-cache-gb",
    "mm-processor-cache-type",
    "mm-processor-kwargs",
    "mm-shm-cache-max-object-size-mb",
    "mm-tensor-ipc",
    "model",
    "model-impl",
    "model-loader-extra-config",
    "moe-backend",
    "nnodes",
    "node-rank",
    "num-gpu-blocks-override",
    "offload-backend",
    "offload-group-size",
    "offload-num-in-group",
    "offload-params",
    "offload-prefetch-step",
    "optimization-level",
    "otlp-traces-endpoint",
    "override-attention-dtype",
    "override-generation-config",
    "performance-mode",
    "pipeline-parallel-size",
    "pooler-config",
    "port",
    "prefill-context-parallel-size",
    "prefix-caching-hash-algo",
    "profiler-config",
    "pt-load-map-location",
    "quantization",
    "ray-workers-use-nsight",
    "reasoning-config",
    "reasoning-parser",
    "reasoning-parser-plugin",
    "renderer-num-workers",
    "response-role",
    "return-tokens-as-token-ids",
    "revision",
    "root-path",
    "runner",
    "safetensors-load-strategy",
    "scheduler-cls",
    "scheduler-reserve-full-isl",
    "scheduling-policy",
    "seed",
    "served-model-name",
    "show-hidden-metrics-for-version",
    "shutdown-timeout",
    "skip-mm-profiling",
    "skip-tokenizer-init",
    "specialize-active-lora",
    "speculative-config",
    "ssl-ca-certs",
    "ssl-cert-reqs",
    "ssl-certfile",
    "ssl-ciphers",
    "ssl-keyfile",
    "stream-interval",
    "structured-outputs-config",
    "tensor-parallel-size",
    "tokenizer",
    "tokenizer-mode",
    "tokenizer-revision",
    "tokens-only",
    "tool-call-parser",
    "tool-parser-plugin",
    "tool-server",
    "trust-remote-code",
    "trust-request-chat-template",
    "ubatch-size",
    "uds",
    "use-tqdm-on-load",
    "uvicorn-log-level",
    "video-pruning-rate",
    "weight-transfer-config",
    "worker-cls",
    "worker-extension-cls",
)
"""Every argument of ``vllm serve`` in vLLM 0.19.1, as a config file's keys name them (no
leading dashes), taken from the vllm-0.19.1 wheel on PyPI: the flags EngineArgs.add_cli_args
registers (vllm/engine/arg_utils.py), the fields of FrontendArgs and BaseFrontendArgs and the
flags of make_arg_parser (vllm/entrypoints/openai/cli_args.py), and ``--grpc``
(vllm/entrypoints/cli/serve.py). Short aliases such as ``-tp`` are not config keys: vLLM
puts two dashes before every key."""

_KNOWN = frozenset(VLLM_SERVE_ARGS)

_SPECULATIVE = (
    "a flag of older vLLM releases: vLLM 0.19.0 takes it as a field of speculative-config "
    "(method, model, num_speculative_tokens)"
)
_OLD_SPECULATIVE = ("speculative-model", "num-speculative-tokens")
_CONTEXT_PARALLEL = (
    "context parallelism is not modelled: it splits a sequence's KV cache across GPUs, "
    "where decodecalc keeps the whole context on every GPU of the tensor-parallel group"
)
_OFFLOAD = (
    "weight offloading is not modelled: offloaded weights cross PCIe every step, where "
    "decodecalc streams every weight from GPU memory"
)
_STATE = "decodecalc keeps recurrent state in the KV-cache dtype"
_SIZED_CACHE = (
    "sizes the KV cache itself; decodecalc's memory check gives it what "
    "gpu-memory-utilization leaves after the weights, as vLLM does by default"
)

_REFUSED: dict[str, tuple[tuple[Any, ...], str]] = {
    "decode-context-parallel-size": ((1,), _CONTEXT_PARALLEL),
    "prefill-context-parallel-size": ((1,), _CONTEXT_PARALLEL),
    "cpu-offload-gb": ((0,), _OFFLOAD),
    "offload-group-size": ((0,), _OFFLOAD),
    "kv-cache-memory-bytes": ((), _SIZED_CACHE),
    "num-gpu-blocks-override": ((), _SIZED_CACHE),
    "kv-cache-dtype-skip-layers": (
        ([],),
        "decodecalc stores every layer's KV cache in kv-cache-dtype",
    ),
    "hf-overrides": (
        ({},),
        "decodecalc reads the model as published; give a model config.json with the "
        "changes instead",
    ),
    "mamba-cache-dtype": (("auto",), _STATE),
    "mamba-ssm-cache-dtype": (("auto",), _STATE),
}
"""Arguments that change decoding in a way decodecalc does not model: refused with the
reason unless set to a value that leaves decoding as it is."""

_COUNTS = (
    "data-parallel-size",
    "decode-context-parallel-size",
    "prefill-context-parallel-size",
)
"""Counts of GPUs decodecalc does not read as a setting, checked here like tp: at least 1."""

_QUANTIZATION = {
    "fp8": "fp8-bf16-head",
    "fbgemm_fp8": "fp8-bf16-head",
    "ptpc_fp8": "fp8-bf16-head",
    "awq": "int4-g128-fp16-head",
    "awq_marlin": "int4-g128-fp16-head",
    "gptq": "int4-g128-fp16-head",
    "gptq_marlin": "int4-g128-fp16-head",
    "mxfp4": "gpt-oss-mxfp4",
    "modelopt_fp4": "nvfp4-bf16-head",
    "nvfp4": "nvfp4-bf16-head",
}
"""vLLM's quantization methods as the weight recipes they load: each method's
get_quant_method gives linear layers (and fused experts) a quantized method and the
ParallelLMHead and embedding none, so those stay in the activations' BF16/FP16
(vllm-project/vllm, vllm/model_executor/layers/quantization/: fp8.py at
0071b24bf8fe8c3d1bc3516d0ff8477f07964aaf, LinearBase, FusedMoE and Attention only;
gptq_marlin.py at 00161ce01fe64fdae0ec8ff1ae198c7b9befbdad, the LM head only with
lm_head: true; modelopt.py at 00155cdecca722d98e34234c3d172725b7720b7d, linear layers and
the head outside exclude_modules, which ModelOpt's NVFP4 checkpoints give as [lm_head]
(nvidia/Llama-3.1-8B-Instruct-FP4 hf_quant_config.json); mxfp4.py at
007d50058a06dec0f82472d63c819244d460c40d, fused experts only, every linear layer
unquantized)."""
_DTYPE: dict[str, str | None] = {
    "auto": None,  # the checkpoint's own formats (its quantization_config), else BF16
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "fp16": "fp16",
    "float32": "fp32",
    "float": "fp32",
}
_KV = {
    "fp8": "fp8",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "fp8_inc": "fp8",
    "bfloat16": "bf16",
    "float16": "fp16",
}

Given = dict[str, tuple[str, Any]]
"""The arguments a config sets: name (dashed) -> (the key as written, its value)."""


@record
class ServeConfig:
    """What a vLLM serve config says about decoding."""

    settings: Settings
    """The deployment settings it gives (model, tp, context, batch, weights, kv_dtype,
    memory_utilization), each placed where the vLLM file says it."""
    notes: tuple[Note, ...] = ()
    throughput_mode: bool = False
    """performance-mode: throughput, which doubles the default max-num-seqs."""

    def default_batch(self, gpu: GpuSpec | None) -> int:
        """vLLM's max-num-seqs for ``vllm serve`` when the config gives none
        (EngineArgs.get_batch_defaults): 1,024 on a GPU of 70 GiB or more other than the
        A100; 256 on others, and where the GPU is not known (vLLM's own fallback); twice
        that in throughput mode."""
        from decodecalc.engine.scheduler import scheduler_limits

        seqs = scheduler_limits(ROOFLINE, gpu).max_num_seqs  # vLLM's, as step/kv_pool.py has them
        return seqs * (2 if self.throughput_mode else 1)


def default_batch_note(batch: int) -> Note:
    """Said when a check at the batch ran at vLLM's default max-num-seqs."""
    return Note(
        "vllm-default-max-num-seqs",
        f"max-num-seqs is not set: checked at {batch:,} sequences, vLLM {VLLM_VERSION}'s "
        "default for this GPU (1,024 on GPUs of 70 GiB or more other than the A100, "
        "256 on others; twice that with performance-mode: throughput)",
    )


def looks_like_vllm(data: Any) -> bool:
    """A mapping of vLLM arguments rather than a deployment: dashed keys, or arguments no
    deployment file has (a deployment's keys have underscores, and only ``model`` is both).
    A file of ``model:`` alone is vLLM's smallest config (a deployment needs targets)."""
    if not isinstance(data, dict):
        return False
    keys = [str(k) for k in data]
    if {"deployments", "defaults", "targets", "vllm_config"} & set(keys):
        return False
    if keys == ["model"]:
        return True
    return any("-" in k or (_name(k) in _KNOWN and k != "model") for k in keys)


def read_serve_config(doc: Document, problems: Problems) -> ServeConfig:
    """The settings and notes of a vLLM serve config; every unknown or unmodelled argument
    is a problem, placed at its line and column."""
    if not isinstance(doc.data, dict):
        problems.items.append(f"{doc.path}: expected a mapping of vllm serve arguments")
        return ServeConfig({})
    given = _given(doc, problems)
    return ServeConfig(
        settings=_settings(doc, given, problems),
        notes=_decoding(doc, given, problems),
        throughput_mode=given.get("performance-mode", ("", None))[1] == "throughput",
    )


def _name(key: str) -> str:
    """The argument a key sets, as vLLM reads it: dashes for underscores before any dot."""
    return key.partition(".")[0].replace("_", "-")


def _given(doc: Document, problems: Problems) -> Given:
    given: Given = {}
    written: dict[str, str] = {}
    for raw, value in doc.data.items():
        key = str(raw)
        at = read.locate(doc, (key,))
        name = _name(key)
        negated = name.startswith("no-") and name[3:] in _KNOWN  # --no-X of a boolean flag
        name = name[3:] if negated else name
        same = name + "".join(key.partition(".")[1:])  # a.b and a.c set different fields
        if name in _OLD_SPECULATIVE:
            problems.items.append(f"{at}: {_SPECULATIVE}")
            continue
        if name not in _KNOWN:
            hint = suggest(name, list(VLLM_SERVE_ARGS)) or "; 'vllm serve --help' lists them"
            problems.items.append(
                f"{read.locate_key(doc, (key,))}: unknown key, not a vllm serve argument "
                f"(vLLM {VLLM_VERSION}){hint}"
            )
            continue
        if same in written:
            problems.items.append(
                f"{at}: sets {same} again (first as {written[same]!r}); vLLM keeps the last"
            )
            continue
        written[same] = key
        if _is_switch(name) and not isinstance(value, bool):
            problems.items.append(f"{at}: a switch: expected true or false, got {_shown(value)}")
            continue
        if not (negated or value is False):  # vLLM leaves a false switch out
            given[name] = (key, value)
    return given


def _shown(value: Any) -> str:
    return "null" if value is None else read.show(value)


def _is_switch(name: str) -> bool:
    """An argument vLLM takes as a bare --flag: true writes it, false leaves it out, and
    anything else (0.5, null) becomes a word after it that vllm serve refuses."""
    return name.startswith(("enable-", "disable-")) or name in (
        "enforce-eager",
        "trust-remote-code",
    )


def _settings(doc: Document, given: Given, problems: Problems) -> Settings:
    settings: Settings = {}

    def take(name: str, field: str, convert: Callable[[Any], Any] = lambda v: v) -> None:
        if name in given:
            key, value = given[name]
            at = read.locate(doc, (key,))
            if value is None:  # vLLM passes the text 'None', which no setting read here takes
                problems.items.append(f"{at}: null: give a value, or leave the key out")
                return
            converted = problems.attempt(at, lambda: convert(value))
            if converted is not None:
                settings[field] = Setting(converted, at)

    take("model", "model", partial(_model, Path(doc.path).parent))
    take("tensor-parallel-size", "tp")
    take("pipeline-parallel-size", "pp")
    take("enable-expert-parallel", "ep", read.flag)
    take("data-parallel-size", "data_parallel_size")  # checked in _decoding; see deployments
    take("max-num-seqs", "batch", read.whole)
    if "batch" in settings:  # the serving targets' scheduler limit too
        settings["max_num_seqs"] = settings["batch"]
    take("max-num-batched-tokens", "max_num_batched_tokens", lambda v: read.whole(read.tokens(v)))
    speculative = vllm_speculative(doc, problems)
    if speculative is not None:
        settings["speculative"] = speculative
    take("max-model-len", "context", _max_model_len)
    take("gpu-memory-utilization", "memory_utilization")
    take("kv-cache-dtype", "kv_dtype", _kv_dtype)
    if "quantization" in given:  # the weights' format; dtype is then the activations'
        take("quantization", "weights", _quantization)
    else:
        take("dtype", "weights", lambda v: _DTYPE.get(read.text(v).lower(), v))
    return settings


def _decoding(doc: Document, given: Given, problems: Problems) -> tuple[Note, ...]:
    """Refuse what decodecalc does not model; note what changes how to read its figures."""
    counts: dict[str, int] = {}
    for name, (key, value) in given.items():
        at = read.locate(doc, (key,))
        if name in _COUNTS:
            count = problems.attempt(at, partial(read.whole, value))
            if count is None:
                continue
            counts[name] = count
        refused = _REFUSED.get(name)
        if refused is not None and value is not None and value not in refused[0]:
            problems.items.append(f"{at}: {refused[1]}")
    if "max-num-batched-tokens" in given:
        _batched_tokens(doc, given, problems)
    notes = []
    replicas = counts.get("data-parallel-size", 1)
    if replicas > 1:
        notes.append(
            Note(
                "vllm-data-parallel",
                f"data-parallel-size {replicas}: {replicas} replicas of this engine, each "
                "with its own max-num-seqs and KV cache; every figure is one replica's "
                f"(the server's throughput is {replicas}x the throughput shown)",
            )
        )
    if "enforce-eager" in given:
        notes.append(
            Note(
                "vllm-enforce-eager",
                "enforce-eager: without CUDA graphs every step also pays kernel launches, "
                "which the roofline leaves out (a deployment file's overhead: counts them)",
            )
        )
    return tuple(notes)


def _batched_tokens(doc: Document, given: Given, problems: Problems) -> None:
    """max-num-batched-tokens caps the tokens of one scheduler step; a decode step takes
    one per sequence, and vLLM refuses to start with a cap below max-num-seqs, so a valid
    cap never shrinks the decode batch. It is the chunked-prefill budget the serving
    targets are held under and the batch vLLM profiles its KV pool with (_settings)."""
    key, value = given["max-num-batched-tokens"]
    at = read.locate(doc, (key,))
    cap = problems.attempt(at, lambda: read.whole(read.tokens(value)))
    seqs = given.get("max-num-seqs", ("", None))[1]
    if cap is not None and isinstance(seqs, int) and not isinstance(seqs, bool) and cap < seqs:
        problems.items.append(
            f"{at}: {cap:,} is below max-num-seqs ({seqs:,}); vLLM refuses to start with "
            "fewer batched tokens than sequences"
        )


def _model(folder: Path, value: Any) -> Any:
    """A local model directory, as vLLM takes one, is read from its config.json (relative
    to the vLLM file); anything else names a preset or a Hugging Face id (an alias)."""
    if not isinstance(value, str):
        return value  # the deployment reader says what is wrong with it
    path = expand_user(value)
    config = (path if path.is_absolute() else folder / path) / "config.json"
    return str(config.absolute()) if is_file(config) else value


def _max_model_len(value: Any) -> int:
    if value == -1 or (isinstance(value, str) and value.strip().lower() in ("auto", "-1")):
        raise InputError(
            "'auto' lets vLLM pick the longest context that fits when it starts; give the "
            "length in tokens to check"
        )
    return read.whole(read.tokens(value))


def _kv_dtype(value: Any) -> str | None:
    """None for 'auto', which is decodecalc's default too: the weights' format."""
    name = read.text(value).lower()
    return None if name == "auto" else _KV.get(name, value)


def _quantization(value: Any) -> str:
    mapped = _QUANTIZATION.get(read.text(value).lower())
    if mapped is None:
        raise InputError(
            f"vLLM quantization {value!r} has no decodecalc dtype; set weights: in a "
            f"deployment file (known: {', '.join(sorted(_QUANTIZATION))})"
        )
    return mapped
