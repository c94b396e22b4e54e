"""Benchmark result files as the tools write them, read to decode measurements.

Users have usually run a benchmark already; retyping its figures into a points file means
working out again what "context" and "ms per token" meant in it. Each reader here knows one
tool's format at a stated version and maps each result by the rules
docs/accuracy.md gives ("Benchmark files"), the rules validation/README.md applies to
published points: a serving run decodes at input + output / 2 on average, a llama-bench tg
test at its depth + n_gen / 2; a serving mean per output token is ``tpot_mean``, a genai-perf
inter-token latency ``itl_mean``, a llama-bench tg rate one decode step (``step``).

The formats (READERS' keys) and the versions whose layout they follow:

- ``vllm-bench-serve``: ``vllm bench serve --save-result`` JSON (vllm/benchmarks/serve.py
  at def9ce85, whose keys benchmarks/benchmark_serving.py wrote before it, as in May 2025),
  one result per file or, appended, per line;
- ``sglang-bench-serving``: ``python -m sglang.bench_serving --output-file`` JSONL, one
  result per line (python/sglang/bench_serving.py): the layout of the 0.4.0 line (December
  2024: median ITL and TTFT, mean E2E latency, no TPOT), and the later one's mean TPOT,
  request_throughput and concurrency where a line has them;
- ``llama-bench``: ``llama-bench -o json|jsonl|csv|md`` (tools/llama-bench, build 5163's
  schema; older builds lack n_depth, read as 0);
- ``genai-perf``: genai-perf's profile_export_genai_perf.json (0.0.9 on) and AIPerf's
  profile_export_aiperf.json (0.1 on): metrics as {unit, avg, p50, ...} with input_config.

A file is recognised by what it holds, never by its name alone. What it cannot say (the
GPU, TP, the weights' format where it does not name them, the engine profile) is left to
the caller, who takes it from the same options as every scenario.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from decodecalc.errors import InputError
from decodecalc.loading.datafile import MAX_DIGITS, read_text
from decodecalc.record import record

KNOWN = (
    "vLLM bench serve JSON, SGLang bench_serving JSONL, llama-bench JSON, JSONL, CSV or "
    "markdown, genai-perf or AIPerf profile export JSON"
)
"""The formats in one line, for a message about a file in none of them."""


@record
class BenchRun:
    """One decode measurement from a benchmark file, before any preset is looked up."""

    tool: str
    """A key of READERS."""
    where: str
    """The file and the result in it (``file:line`` or ``file[row]``)."""
    ms_per_token: float
    measured: str
    """A key of calibration.points.MEASURED_KINDS."""
    context: int
    """The mean live context of the decode steps measured (docs/accuracy.md)."""
    batch: int
    """Sequences decoding together: the concurrency (or requests in flight) of a serving
    run over all its replicas, 1 for llama-bench."""
    how: str
    """The mapping in words, as --show-points prints it."""
    model: str | None = None
    """The model as the file names it (a Hugging Face id), where it names one."""
    weights: str | None = None
    """A dtype id where the file names the weights' format (llama-bench's model type)."""
    kv_dtype: str | None = None
    input_len: int | None = None
    output_len: int | None = None
    ttft_ms: float | None = None
    engine: str | None = None
    """The engine the tool itself is part of (llama.cpp); None for clients of any server."""
    engine_version: str | None = None
    hardware: str | None = None
    """The GPU as the file names it (llama-bench's gpu_info), for notes only."""
    replicas: int | None = None
    """Data-parallel replicas the file says its requests were spread over, where it says
    (REPLICA_KEYS), for --replicas to default to."""
    replicas_said: str = ""
    """Where the file says it, in words, for the note that uses it."""


def read_benchmark(path: Path) -> list[BenchRun] | None:
    """The measurements of a benchmark file, or None when the file is in no format read
    here (then it may be a points file). A file that starts as one of them but is cut
    short or lacks what its format requires is an InputError naming what is missing."""
    return parse_benchmark(read_text(path), str(path))


def parse_benchmark(text: str, name: str) -> list[BenchRun] | None:
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        return _from_json(stripped, name)
    first = stripped.splitlines()[0] if stripped else ""
    if first.startswith("build_commit,") or ("avg_ts" in first and "n_gen" in first):
        return _csv_runs(stripped, name)
    if first.startswith("|") and re.search(r"\|\s*test\s*\|", first) and "t/s" in first:
        return _markdown_runs(stripped, name)
    return None


# --- JSON and JSON Lines -------------------------------------------------------------------


def _from_json(text: str, name: str) -> list[BenchRun] | None:
    try:
        data = _loads(text, name)
        items = (
            [(f"{name}[{i}]", item) for i, item in enumerate(data)]
            if isinstance(data, list)
            else [(name, data)]
        )
    except json.JSONDecodeError as whole:
        if not any(f'"{key}"' in text for key in SIGNS):
            return None  # not JSON from any tool read here (a points file in YAML flow style)
        items = _json_lines(text, name, whole)
    if not items:
        return None
    tools = [_tool_of(item) for _, item in items]
    if all(tool is None for tool in tools):
        return None
    runs: list[BenchRun] = []
    for (where, item), tool in zip(items, tools, strict=True):
        if tool is None:
            raise InputError(f"{where}: not a result of any benchmark tool read, as the rest are")
        runs.extend(READERS[tool](_Obj(item, where, tool)))
    return runs


SIGNS = (
    "avg_ts",
    "n_gen",
    "tokenizer_id",
    "mean_tpot_ms",
    "median_itl_ms",
    "total_output_tokens_retokenized",
    "inter_token_latency",
)
"""Keys that only the tools read here write: JSON that holds one and does not parse is a
result cut short, not some other file."""


def _json_lines(text: str, name: str, whole: json.JSONDecodeError) -> list[tuple[str, Any]]:
    """One JSON object per line (JSONL); a file that is neither is cut short or broken,
    and the message says where."""
    lines = [(i, line) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
    if len(lines) < 2 or not lines[0][1].rstrip().endswith("}"):  # one document, cut short
        raise InputError(
            f"{name}:{whole.lineno}:{whole.colno}: not valid JSON ({whole.msg}): "
            "is the file cut short?"
        )
    found = []
    for number, line in lines:
        try:
            found.append((f"{name}:{number}", _loads(line, f"{name}:{number}")))
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{name}:{number}:{exc.colno}: not valid JSON ({exc.msg}): is the line cut short?"
            ) from None
    return found


def _loads(text: str, name: str) -> Any:
    """JSON as json.loads reads it, with a number too long for an integer or nesting
    deeper than Python's stack refused in one line (an InputError)."""

    def whole(digits: str) -> int:
        if len(digits) > MAX_DIGITS:
            raise InputError(f"{name}: a number of {len(digits):,} digits; no benchmark has one")
        return int(digits)

    try:
        return json.loads(text, parse_int=whole)
    except RecursionError:
        raise InputError(f"{name}: nested too deeply to be a benchmark result") from None


def _tool_of(item: object) -> str | None:
    if not isinstance(item, dict):
        return None
    keys = set(item)
    if {"n_gen", "n_prompt"} <= keys or ("avg_ts" in keys and keys & {"n_gen", "n_prompt"}):
        return "llama-bench"
    if "tokenizer_id" in keys or "burstiness" in keys:
        return "vllm-bench-serve"
    if "total_output_tokens_retokenized" in keys or "mean_e2e_latency_ms" in keys:
        return "sglang-bench-serving"
    metric = item.get("inter_token_latency") or item.get("time_to_first_token")
    if "input_config" in keys or (isinstance(metric, dict) and "unit" in metric):
        return "genai-perf"
    return None


class _Obj:
    """One result object and typed access to its fields, each problem one line that
    names the file, the result and the field."""

    def __init__(self, data: Mapping[str, Any], where: str, tool: str) -> None:
        self.data, self.where, self.tool = data, where, tool

    def missing(self, key: str, why: str = "") -> InputError:
        return InputError(
            f"{self.where}: a {self.tool} result without {key!r}{why}; "
            "is the file cut short or from another tool?"
        )

    def number(self, key: str, *, required: bool = True, positive: bool = True) -> float | None:
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.missing(key)
            return None
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise InputError(f"{self.where}: {key}: expected a number, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(f"{self.where}: {key}: expected a number, got {value!r}"[:300])
        if not math.isfinite(value):
            raise InputError(f"{self.where}: {key}: expected a finite number, got {value!r}")
        if positive and value <= 0:
            raise InputError(f"{self.where}: {key}: must be above 0, got {value!r}")
        return float(value)

    def need(self, key: str, positive: bool = True) -> float:
        found = self.number(key, positive=positive)
        assert found is not None
        return found

    def text(self, key: str) -> str | None:
        value = self.data.get(key)
        return value.strip() or None if isinstance(value, str) else None


# --- vLLM and SGLang serving benchmarks -----------------------------------------------------


FIGURES = (
    ("mean_tpot_ms", "tpot_mean", "mean TPOT"),
    ("median_itl_ms", "itl_median", "median ITL"),
    ("mean_itl_ms", "itl_mean", "mean ITL"),
)
"""The per-token figure a serving result is read at, the first it holds: its mean TPOT
(every vLLM result, SGLang's later layouts), else the median inter-token latency (SGLang's
late-2024 output file held no TPOT), else the mean one. Each is a MEASURED_KINDS key."""


def _figure(o: _Obj) -> tuple[float, str, str]:
    for key, kind, words in FIGURES:
        value = o.number(key, required=False)
        if value is not None:
            return value, kind, words
    raise o.missing("mean_tpot_ms", " (nor median_itl_ms, mean_itl_ms)")


REPLICA_KEYS = ("decode_replicas", "replicas", "num_replicas", "data_parallel_size")
"""Keys a serving result file may carry naming the replicas its requests were spread over
(llm-d's benchmark harness writes decode_replicas beside vLLM bench serve's results)."""


def _replicas(o: _Obj) -> tuple[int | None, str]:
    """The replicas the file names, and the key (with its GPU field, where it has one); a
    value that is no whole count of 1 or more is passed over (the figures stand without it)."""
    for key in REPLICA_KEYS:
        try:
            found = o.number(key, required=False, positive=False)
        except InputError:
            continue
        if found is not None and found >= 1 and found == int(found):
            gpus = o.text("gpu")
            return int(found), f'"{key}": {int(found)}' + (f', "gpu": "{gpus}"' if gpus else "")
    return None, ""


def _serving(o: _Obj, in_flight: Callable[[_Obj, int], tuple[int, str]]) -> list[BenchRun]:
    """A serving result: the mean lengths from the totals over completed requests, the
    decode at input + output / 2, the per-token figure of FIGURES, the batch as
    ``in_flight`` finds it."""
    completed = round(o.need("completed"))
    input_len = max(1, round(o.need("total_input_tokens") / completed))
    output_len = round(o.need("total_output_tokens") / completed)
    if output_len < 2:
        raise InputError(
            f"{o.where}: {output_len} output token(s) per request: no decode step to time"
        )
    ms, kind, words = _figure(o)
    batch, said = in_flight(o, output_len)
    context = input_len + output_len // 2
    replicas, replicas_said = _replicas(o)
    how = (
        f"{words} {ms:.3f} ms at context {input_len:,} + {output_len:,} / 2 = {context:,} "
        f"(mean lengths: totals over {completed:,} requests), batch {batch} ({said})"
    )
    return [
        BenchRun(
            o.tool,
            o.where,
            ms,
            kind,
            context,
            batch,
            how,
            model=o.text("model_id"),
            input_len=input_len,
            output_len=output_len,
            ttft_ms=o.number("mean_ttft_ms", required=False),
            replicas=replicas,
            replicas_said=replicas_said,
        )
    ]


def _rate(o: _Obj) -> float:
    """Completed requests per second: the file's figure, else completed over duration."""
    found = o.number("request_throughput", required=False)
    return found if found is not None else o.need("completed") / o.need("duration")


def _little(o: _Obj, latency_ms: float) -> tuple[int, str]:
    """Requests in flight by Little's law: throughput x mean request latency."""
    rate = _rate(o)
    return max(1, round(rate * latency_ms / 1000)), (
        f"requests in flight by Little's law: {rate:.3f} req/s x {latency_ms / 1000:.3f} s"
    )


def _vllm_in_flight(o: _Obj, output_len: int) -> tuple[int, str]:
    """max_concurrency where set (an upper bound), else Little's law with each request's
    mean latency: its TTFT plus the decode of the tokens after the first (the E2E
    latency where the file has it)."""
    cap = o.number("max_concurrency", required=False)
    if cap is not None:
        return min(round(cap), round(o.need("completed"))), "max_concurrency, an upper bound"
    latency = o.number("mean_e2el_ms", required=False)
    if latency is None:
        ttft = o.need("mean_ttft_ms", positive=False)
        latency = ttft + o.need("mean_tpot_ms") * (output_len - 1)
    return _little(o, latency)


def _sglang_in_flight(o: _Obj, output_len: int) -> tuple[int, str]:
    """SGLang's own mean in flight ('concurrency', in its later layouts), else max_concurrency
    (an upper bound), else Little's law with the mean E2E latency."""
    mean = o.number("concurrency", required=False)
    if mean is not None:
        return max(1, round(mean)), "the mean in flight bench_serving reports"
    cap = o.number("max_concurrency", required=False)
    if cap is not None:
        return min(round(cap), round(o.need("completed"))), "max_concurrency, an upper bound"
    return _little(o, o.need("mean_e2e_latency_ms"))


# --- llama-bench ------------------------------------------------------------------------------

KV_TYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "q8_0": "q8-0", "q4_0": "q4-0"}
"""llama.cpp cache types (type_k) and the dtype presets of the same bytes."""

FTYPES = {
    "F16": "fp16",
    "BF16": "bf16",
    "Q8_0": "q8-0",
    "Q4_0": "q4-0",
    "Q4_K - Medium": "q4-k-m",
    "Q4_K - Small": "q4-k",
    "Q5_K - Medium": "q5-k-m",
    "Q6_K": "q6-k",
}
"""llama.cpp file types as model_type ends ('qwen2 7B Q4_K - Medium') and their dtype
presets; any other needs -w."""


@record
class _Test:
    n_prompt: int
    n_gen: int
    n_depth: int
    tokens_per_s: float


def _llama_run(o: _Obj, test: _Test, model_type: str | None, type_k: str | None) -> BenchRun:
    context = test.n_depth + test.n_gen // 2
    ms = 1000 / test.tokens_per_s
    depth = f"@ d{test.n_depth} " if test.n_depth else ""
    kv = None
    if type_k is not None:
        kv = KV_TYPES.get(type_k.lower())
        if kv is None:
            raise InputError(
                f"{o.where}: type_k {type_k!r} is a cache type decodecalc has no preset for "
                f"(known: {', '.join(KV_TYPES)})"
            )
    build = o.text("build_commit")
    number = o.data.get("build_number")
    version = f"b{number}" if number not in (None, "") else None
    if build:
        version = f"{version} ({build})" if version else build
    backends = o.text("backends") or ""
    return BenchRun(
        "llama-bench",
        o.where,
        ms,
        "step",
        context,
        1,
        f"tg{test.n_gen} {depth}at {test.tokens_per_s:g} t/s: 1000 / t/s = {ms:.3f} ms per "
        f"step at context {test.n_depth:,} + {test.n_gen} / 2 = {context:,}",
        weights=_ftype(model_type),
        kv_dtype=kv,
        engine="llama.cpp-metal" if "metal" in backends.lower() else "llama.cpp",
        engine_version=version,
        hardware=o.text("gpu_info"),
    )


def _ftype(model_type: str | None) -> str | None:
    if not model_type:
        return None
    found = re.match(r"^\S+ \S+ (?:mostly )?(.+)$", model_type.strip())
    return FTYPES.get(found.group(1)) if found else None


def _llama_bench(o: _Obj) -> list[BenchRun]:
    """A text-generation test (n_gen > 0, no prompt) is decode steps alone; prompt tests
    and pg tests (a prompt inside the timing) are left out."""
    n_prompt = round(o.need("n_prompt", positive=False))
    n_gen = round(o.need("n_gen", positive=False))
    depth = o.number("n_depth", required=False, positive=False) or 0.0
    if n_gen <= 0 or n_prompt > 0:
        return []
    test = _Test(n_prompt, n_gen, round(depth), o.need("avg_ts"))
    return [_llama_run(o, test, o.text("model_type"), o.text("type_k"))]


def _csv_runs(text: str, name: str) -> list[BenchRun]:
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows:
        raise InputError(f"{name}: a llama-bench CSV header with no rows under it")
    runs = []
    for i, row in enumerate(rows, 2):
        if None in row or any(value is None for value in row.values()):
            raise InputError(f"{name}:{i}: fewer or more fields than the header: cut short?")
        runs.extend(_llama_bench(_Obj(row, f"{name}:{i}", "llama-bench")))
    return runs


_MD_TEST = re.compile(r"^(pp|tg)\s*(\d+)(?:\s*@\s*d(\d+))?$")


def _markdown_runs(text: str, name: str) -> list[BenchRun]:
    """llama-bench's default table: model, size, params, backend, ..., test, t/s; a
    'build: COMMIT (NUMBER)' line may follow."""
    lines = text.splitlines()
    header = [cell.strip() for cell in lines[0].strip().strip("|").split("|")]
    build = re.search(r"build:\s*(\w+)\s*\((\d+)\)", text)
    runs = []
    for number, line in enumerate(lines[2:], 3):
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != len(header):
            raise InputError(f"{name}:{number}: {len(cells)} cells under {len(header)} columns")
        row = dict(zip(header, cells, strict=True))
        where = f"{name}:{number}"
        test = _MD_TEST.match(row.get("test", ""))
        if test is None or test.group(1) != "tg":
            continue
        rate = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(?:±\s*\d+(?:\.\d+)?)?\s*", row.get("t/s", ""))
        if rate is None or float(rate.group(1)) <= 0:
            raise InputError(f"{where}: t/s {row.get('t/s', '')!r} is not a rate")
        fields = {"gpu_info": None, "backends": row.get("backend")}
        if build:
            fields.update(build_commit=build.group(1), build_number=build.group(2))
        o = _Obj(fields, where, "llama-bench")
        measured = _Test(0, int(test.group(2)), int(test.group(3) or 0), float(rate.group(1)))
        # The table shows type_k only where it is not llama.cpp's default, f16.
        runs.append(_llama_run(o, measured, row.get("model"), row.get("type_k", "f16")))
    return runs


# --- genai-perf / AIPerf ----------------------------------------------------------------------

_TO_MS = {"ms": 1.0, "s": 1000.0, "sec": 1000.0, "us": 0.001, "ns": 1e-6}


def _metric(o: _Obj, key: str, *, required: bool = True) -> float | None:
    found = o.data.get(key)
    if found is None:
        if required:
            raise o.missing(key)
        return None
    if not isinstance(found, dict) or "avg" not in found:
        raise InputError(f"{o.where}: {key}: expected {{unit, avg, ...}}, got {found!r}"[:300])
    value = _Obj(found, f"{o.where}: {key}", o.tool).need("avg")
    unit = str(found.get("unit", "ms"))
    if key in ("inter_token_latency", "time_to_first_token"):
        if unit not in _TO_MS:
            raise InputError(f"{o.where}: {key}: unit {unit!r} is not a time")
        value *= _TO_MS[unit]
    return value


def _genai_perf(o: _Obj) -> list[BenchRun]:
    config = o.data.get("input_config")
    if not isinstance(config, dict):
        raise o.missing("input_config", " (what load was sent)")
    loadgen = config.get("loadgen") if isinstance(config.get("loadgen"), dict) else {}
    concurrency = config.get("concurrency", (loadgen or {}).get("concurrency"))
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise o.missing("input_config.concurrency", " (a request-rate run is not read)")
    itl = _metric(o, "inter_token_latency", required=False)
    said = "mean inter-token latency"
    if itl is None:
        per_user = _metric(o, "output_token_throughput_per_user")
        assert per_user is not None
        itl, said = 1000 / per_user, "1000 / output token throughput per user"
    input_len = max(1, round(_metric(o, "input_sequence_length") or 0))
    output_len = round(_metric(o, "output_sequence_length") or 0)
    context = input_len + output_len // 2
    model = config.get("model")
    endpoint = config.get("endpoint") if isinstance(config.get("endpoint"), dict) else {}
    names = model if isinstance(model, list) else (endpoint or {}).get("model_names")
    return [
        BenchRun(
            o.tool,
            o.where,
            itl,
            "itl_mean",
            context,
            concurrency,
            f"{said} {itl:.3f} ms at context {input_len:,} + {output_len:,} / 2 = {context:,} "
            f"(mean sequence lengths), batch {concurrency} (the concurrency, an upper bound)",
            model=str(names[0]) if isinstance(names, list) and names else None,
            input_len=input_len,
            output_len=output_len,
            ttft_ms=_metric(o, "time_to_first_token", required=False),
        )
    ]


READERS: dict[str, Callable[[_Obj], list[BenchRun]]] = {
    "vllm-bench-serve": lambda o: _serving(o, _vllm_in_flight),
    "sglang-bench-serving": lambda o: _serving(o, _sglang_in_flight),
    "llama-bench": _llama_bench,
    "genai-perf": _genai_perf,
}
