"""Fit the engine profiles in presets/engines/ to the measured points in validation/points.yaml
and a share of validation/points-2026-thin-regimes.yaml.

    python validation/fit_engines.py            # with decodecalc installed (.venv/bin/python)

Rewrites presets/engines/<engine>.yaml for every engine with points, plus the engines the
issue asks for that have none, carried over from the closest measured engine and marked
so (``points: 0``, ``fitted: none``). The same points and code give the same bytes. A
hand-written ``serving:`` block (scheduler defaults) already in a profile is kept verbatim.

A profile has no entry for a family it has no points on: --engine then takes its
best-measured family as one vote among the profiles measured on that family
(decodecalc/engine/select.py: engine_for), the rule `decodecalc validate`'s
leave-one-group-out figure measures.

The rules (decodecalc/calibration/engine_fit.py and validation.py hold the code):
- Points without ``exclude`` count; each belongs to its engine and its GPU's family
  (nvidia-datacenter, nvidia-consumer, amd-instinct, apple); each engine+family is fitted
  on its own.
- The loss is the relative error, weighted by what a figure measures (a timed step 1,
  median ITL and generate-call-over-tokens 1/2, serving means and TPOT 1/4).
- A serving mean (tpot_mean, tpot_median, itl_mean) at concurrency > 1 is fitted less the
  other requests' prefill chunks it holds, as the serving model prices them for its
  workload and its engine's scheduler defaults at the roofline (free of the parameters
  being fitted): answers/serving.py prefill_share_s.
- e_w always; e_kv only where one scenario is measured at several contexts, else at the
  ratio to e_w that the same engine shows on another family, else 0.85 (flash attention);
  then the per-MoE-layer cost (where there are two MoE points or more), the all-reduce
  latency (where there are TP > 1 points), the per-step cost, the per-layer cost (where
  layer counts mix), the running costs (decodecalc/step/running.py: per feed-forward pass,
  per running request, per mixer layer, per recurrent layer; where one scenario is measured
  at several batch sizes, each next one where models' counts differ), each only where the
  points separate it from what came before and number at least twice the unknowns. A
  per-layer, per-step or per-MoE-layer cost (and e_mma) not fitted is that of one fit over
  every engine's points on the same GPU family (never zero where that fit finds one: every
  engine pays launch costs); a running cost not fitted is the smallest any group's own
  batch sweeps on the family show, else none (a lent one is another release's scheduler,
  multiplied by tens of thousands of passes in a big MoE's step: calibration/validation.py
  lent_running_costs); the all-reduce latency not fitted is the link's.
- e_mma (the share of peak FLOP/s a compute-bound GEMM multiplies at) where two points or
  more have compute-bound GEMMs, else 0.6; grouped expert GEMMs compute each expert's
  rows in tiles of 16 (step/step.py weight_ops).
  The ``fitted:`` line of each family says which were fitted and why the others were not.
- KV read mode: the one that fits better ('per-query-head' only when 1% better).
- A point whose compute at the GPU's peak exceeds its memory time at the fitted
  efficiencies is fitted as compute + fixed costs.
- Prefill (serving): where an engine+family has serving points with a measured TTFT,
  the prefill efficiency e_p (share of peak FLOP/s its prefill chunks reach) and the
  per-request cost c_req (tokenising, scheduling, the API server) that best predict their
  TTFT and mean TPOT through the serving model with the decode fit above
  (engine_fit.fit_prefill): both where prompt sizes lie 2x apart or more (and the points
  number four or more; else e_p alone); c_req alone at the median e_p of those on the
  same GPU family where prompts are of one size; else e_p alone. Engines+families without
  TTFTs take the family's medians, else e_p 1 and no c_req.
- Release lines: each engine+family is also fitted per release line (the points'
  ``release``) where the line has 4 points or more of 3 models or more, with the
  engine+family's pooled fit as the prior (what the line's points cannot identify, the
  same engine's other lines on the same chips say); a line holding every point of the
  family is the pooled fit. The profile's ``lines:`` block lists every line its points
  name, with their versions, the dates those versions carry (dates_of: a container tag's
  date, a dated build; none looked up elsewhere) and points, and the parameters of the
  lines so fitted; the
  pooled ``families:`` stay the line-less fallback (calibration/validation.py: fit_lines,
  engine/select.py: at_line).
- Range: each parameter set records what its points span (``range:``: model parameters,
  dense or MoE, batch, context, GPUs, lines, and each fitted model's size: a model within
  a quarter of one is inside) and its band outside that range (below).
- Shares (FITTED_SHARES): the 2026 points fitted from a partly held-out file (vLLM 0.19
  and ATOM on MI355X, by model) are fitted apart: a new line on the engine's pooled fit as
  the prior, or a new engine on its own points (with_lines), outside the pooled fits, the
  family priors and the family bands; their bands come from their own residuals: inside
  the range each model's batch size left out in turn, outside it each model left out in
  turn (with_share_bands). Vendor factors take the vendor's points of
  release lines dated within twelve months before AS_OF (2026-12-02).
- Band: split-conformal 80% intervals of measured / expected over the left-out
  predictions of the points on the profile's GPU family (each point predicted by
  profiles refitted without its group, its model, its GPU and its engine's newer release
  lines: validate's four ways). Inside the fitted range, the interval of the predictions
  that lay inside their predictor's range (a left-out model of a fitted size and kind, on
  fitted GPUs and lines), every way pooled; outside it, the widest of each way's
  interval over every prediction and of the interval over those outside their
  predictor's range (calibration/validation.py: outside_bands). A family with fewer than
  20 residuals of a kind takes every family's. So the band is the error to expect on a
  setup the fit has not seen, a setup like the fitted ones or a new one, not the fit's
  in-sample spread.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path

from decodecalc.calibration.points import MeasuredPoint, read_points
from decodecalc.calibration.validation import (
    FamilyFit,
    Labelled,
    conformal_band,
    fit_engines,
    fit_line,
    fit_prefills,
    labelled,
    predicted,
    prefill_cases,
    shipped_bands,
    with_band,
    with_prefill,
)
from decodecalc.engine.profile import EngineParams, release_order
from decodecalc.engine.select import AS_OF as SHIPPED_AS_OF
from decodecalc.engine.select import extrapolated
from decodecalc.engine.transfer import VendorFactor, across, transferred
from decodecalc.loading.catalog import Catalog, presets_dir
from decodecalc.loading.saved import FamilyProfile, LineProfile, engine_profile_text
from decodecalc.record import record, replace

ROOT = Path(__file__).resolve().parent.parent


@record
class About:
    name: str
    aliases: tuple[str, ...] = ()
    notes: str = ""
    carried_from: str = ""
    """For an engine without points: the measured engine whose parameters stand in."""


ENGINES = {
    "atom": About(
        "ATOM",
        notes="AMD's inference server for Instinct GPUs (ROCm/ATOM): aiter kernels, its own "
        "scheduler; fitted on its nightly benchmark dashboard (MI355X, May 2026).",
    ),
    "vllm": About("vLLM", notes="CUDA graphs, FlashAttention / FlashInfer kernels; ROCm on AMD."),
    "sglang": About("SGLang", notes="CUDA graphs, FlashInfer / Triton attention."),
    "tensorrt-llm": About("TensorRT-LLM", ("trtllm", "trt-llm")),
    "llama.cpp": About(
        "llama.cpp (CUDA)",
        ("llamacpp",),
        "CUDA builds; the older builds ran without flash attention, the DGX Spark ones with it.",
    ),
    "llama.cpp-metal": About("llama.cpp (Metal)", ("llamacpp-metal",), "Apple GPUs, Metal."),
    "lmdeploy": About("LMDeploy (TurboMind)", ("turbomind",)),
    "gpt-fast": About("gpt-fast", notes="torch.compile; the A100s were power-capped at 330 W."),
    "torchao": About("torchao generate.py", notes="gpt-fast derived, torch.compile."),
    "mlc": About("MLC LLM", ("mlc-llm",)),
    "tgi": About(
        "Text Generation Inference",
        ("text-generation-inference",),
        "No published points in validation/points.yaml: vLLM's parameters carried over, its "
        "fit to every release line's points pooled on each GPU family (vllm.yaml's "
        "families), not the newest line alone that --engine vllm takes, so the two can "
        "differ by a third or more (DeepSeek-V3 on H200, Llama-3.1-8B on MI300X); TGI also "
        "runs paged flash attention with CUDA graphs. Its band does not cover TGI's own "
        "differences.",
        carried_from="vllm",
    ),
    # --- MLX on Apple (validation/points-apple.yaml; FITTED_SHARES below) ---
    "mlx": About(
        "MLX (mlx-lm)",
        ("mlx-lm",),
        "Fitted on mlx-lm 0.31.1 (mlx 0.31.1, March 2026) on an M4 Max 128 GB: ten points of "
        "GLM-4.7-Flash, Qwen3-8B, Qwen3-Coder-Next (Qwen3-Next-80B-A3B), gpt-oss-20b and "
        "gpt-oss-120b, 4-bit (group 64) and MXFP4-Q8, each at a short and a 22K-token prompt "
        "(validation/points-apple.yaml). Its 22 other MLX points (mlx-lm 0.28 and 0.30, "
        "vllm-mlx, mlx-omni-server, LM Studio's MLX engine; M4 Max 48-128 GB, M3 Ultra "
        "256-512 GB, M2 Ultra 64 GB) stay out of sample (docs/accuracy.md, 'MLX on Apple').",
    ),
    # --- end MLX on Apple ---
}
"""Every engine the presets ship, with what the fit cannot know about it."""

HEADER = (
    "Written by validation/fit_engines.py from validation/points.yaml and a share of\n"
    "validation/points-2026-thin-regimes.yaml and validation/points-apple.yaml (FITTED_SHARES):\n"
    "re-run the script instead of editing (its docstring states the fitting rules)."
)


def lines_of(
    engine: str,
    fits: list[FamilyFit],
    items: list[Labelled],
    vendors: Sequence[VendorFactor] = (),
) -> list[LineProfile]:
    """Each release line the engine's points name, oldest first: its versions and points,
    its own parameters on the families where it has enough points (fit_lines), and on
    the newest line so fitted, its parameters transferred to each family with a vendor
    factor where it has none (transfers)."""
    mine = [p for p in items if p.engine == engine and p.release]
    newest = newest_fitted(fits)
    out = []
    for line in sorted({p.release for p in mine if p.release}, key=release_order):
        held = [p for p in mine if p.release == line]
        families = [
            FamilyProfile(f.family, x.fit.params, x.fit.describe())
            for f in fits
            for x in f.lines
            if x.line == line
        ]
        if newest is not None and line == newest[0]:
            families += transfers(engine, newest, families, vendors, items)
        versions = tuple(sorted({p.version for p in held if p.version}))
        out.append(
            LineProfile(line, versions, len(held), tuple(families), dates_of(line, versions))
        )
    return out


SOURCE_FAMILY = "nvidia-datacenter"
"""The family a release line's rates transfer from: the one with kernel tables per engine
release and the most lines fitted."""

NEWEST_DAYS = 365
"""A vendor's newest points: those of its release lines dated within twelve months before
AS_OF (older ones are other releases' kernels)."""

AS_OF = SHIPPED_AS_OF
"""The day the shipped profiles are fitted for, fixed so that the same points give the
same bytes: the vendor factors' twelve months end on it. As of it, SGLang 0.4.2 on MI300X
(February 2025) and vLLM 0.10.0 (August 2025) are older than a year, so the AMD factor
rests on vLLM 0.19's MI355X points of May 2026 alone (FITTED_SHARES). The typical band's
twelve months end on the same day (engine/select.py AS_OF, recent_on)."""

VENDOR = "nvidia-"
"""The source family's vendor: a factor is fitted for the families of other vendors only
(amd-instinct, apple), whose kernels are other code; NVIDIA's consumer cards run the same
engines' CUDA kernels, and engine/select.py's fallback stands there as before."""

MIN_VENDOR_POINTS = 8
"""Points a vendor factor needs: fewer, and no line transfers to the family."""


def newest_fitted(fits: Sequence[FamilyFit]) -> tuple[str, EngineParams] | None:
    """An engine's newest release line with parameters of its own on SOURCE_FAMILY, and
    those parameters (None: no line fitted there)."""
    found = [x for f in fits if f.family == SOURCE_FAMILY for x in f.lines if x.line]
    if not found:
        return None
    best = max(found, key=lambda x: release_order(x.line or ""))
    return best.line or "", best.fit.params


def transfers(
    engine: str,
    newest: tuple[str, EngineParams],
    own: Sequence[FamilyProfile],
    vendors: Sequence[VendorFactor],
    items: Sequence[Labelled],
) -> list[FamilyProfile]:
    """The newest line's SOURCE_FAMILY parameters on each family with a vendor factor
    where the line has none of its own and the engine's own points there are not current
    (current_on; engine/transfer.py)."""
    line, params = newest
    fitted = {f.family for f in own} | {
        v.family for v in vendors if current_on(engine, v.family, items)
    }
    return [
        FamilyProfile(
            v.family,
            moved := transferred(params, v, engine, line),
            f"none of its own: {moved.transferred}",
        )
        for v in vendors
        if v.family not in fitted
    ]


def vendor_factors(
    fits: dict[tuple[str, str], FamilyFit], items: Sequence[Labelled]
) -> list[VendorFactor]:
    """Each other vendor's GPU family's factors over SOURCE_FAMILY: the medians of
    measured / expected over the family's newest points (NEWEST_DAYS), each predicted by
    its own engine's newest line fitted on SOURCE_FAMILY as it would transfer at factor 1
    (engine/transfer.py across: the family's own link latency, as transferred prices it):
    how much slower the vendor's kernels run a step than the same engine's rates on the
    source say, for dense models and, over that, for MoE models (each kind with
    MIN_VENDOR_POINTS points; with fewer, MoE models take the dense factor, whose kernels
    an MoE step runs too, and dense models none, 1: the grouped GEMMs and the MoE
    dispatch an MoE median holds are the vendor's own code, which no dense step runs).
    Only points of engines with such a line count. On AMD Instinct, vLLM 0.19's MI355X
    points are all MoE: their median stood for dense models too (x1.02), until the
    per-MoE-layer cost crossed vendors as the target's MoE kernel's fixed time
    (engine/transfer.py KERNEL_MOE_FIXED_S) and it read x1.24, which would have made
    SGLang 0.5's Llama-3.1-8B on an MI355X 21% slower on no dense point's word."""
    out = []
    for family in sorted({p.family for p in items if not p.family.startswith(VENDOR)}):
        ratios: dict[str, list[float]] = {"dense": [], "moe": []}
        named = set()
        for p in newest_points(family, items):
            source = newest_fitted([f for (e, _), f in fits.items() if e == p.engine])
            if source is None:
                continue
            expected = predicted(p, (across(source[1], SOURCE_FAMILY, family),), p.engine).seconds
            kind = "dense" if p.point.scenario.model.moe() is None else "moe"
            ratios[kind].append(p.terms.measured_s / expected)
            gpu = p.point.scenario.gpu
            named.add(f"{p.engine}@{p.release} on {gpu.id if gpu else 'a given bandwidth'}")
        enough = {k: v for k, v in ratios.items() if len(v) >= MIN_VENDOR_POINTS}
        if not enough:
            continue
        medians = {k: statistics.median(v) for k, v in enough.items()}
        dense = medians.get("dense", 1.0)
        moe = medians.get("moe", dense)
        scaled = [r / dense for r in ratios["dense"]] + [r / moe for r in ratios["moe"]]
        out.append(
            VendorFactor(
                family,
                SOURCE_FAMILY,
                dense,
                conformal_band(scaled),
                len(scaled),
                ", ".join(sorted(named)),
                moe / dense,
            )
        )
    return out


def newest_points(family: str, items: Sequence[Labelled]) -> list[Labelled]:
    """The family's points of release lines dated within NEWEST_DAYS before AS_OF
    (dates_of: from the points' own version strings)."""
    recent = {
        key for key, day in line_dates(family, items).items() if (AS_OF - day).days <= NEWEST_DAYS
    }
    return [p for p in items if p.family == family and (p.engine, p.release) in recent]


def line_dates(family: str, items: Sequence[Labelled]) -> dict[tuple[str, str | None], date]:
    """The day of each (engine, release line) with points on the family, for the lines
    whose points' versions give one."""
    dated: dict[tuple[str, str | None], date] = {}
    for engine, line in {(p.engine, p.release) for p in items if p.family == family and p.release}:
        versions = [p.version for p in items if (p.engine, p.release) == (engine, line)]
        days = [d for d in dates_of(line or "", versions) if len(d) == 10]
        if days:
            dated[engine, line] = date.fromisoformat(max(days))
    return dated


def line_ages(family: str, items: Sequence[Labelled]) -> dict[tuple[str, str | None], int]:
    """Days each (engine, release line) with points on the family is older than the
    newest line dated there, for the lines whose points' versions give a day."""
    dated = line_dates(family, items)
    last = max(dated.values(), default=None)
    return {key: (last - day).days for key, day in dated.items() if last is not None}


CURRENT_DAYS = 92
"""An engine's own line on a family within three months of the newest line dated there is
as current as the family's data gets: it stands, and no newer line is transferred over
it (vLLM 0.10.0 on MI300X, August 2025, predicts the 2026 set's vLLM MI300X points at 9%;
vLLM 0.11 transferred from NVIDIA, at 31%). SGLang's only MI300X line, 0.4.2 of February
2025, is six months older: its newest line transfers."""


def current_on(engine: str, family: str, items: Sequence[Labelled]) -> bool:
    """Whether the engine has points on the family of a line within CURRENT_DAYS of the
    family's newest dated line."""
    ages = line_ages(family, items)
    return any(age <= CURRENT_DAYS for (e, _), age in ages.items() if e == engine)


MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DATES = re.compile(r"(?<!\d)(20\d\d)-?([01]\d)(?:-?([0-3]\d))?(?!\d)|\b([A-Z][a-z]{2}) (20\d\d)\b")


def dates_of(line: str, versions: Sequence[str]) -> tuple[str, ...]:
    """The dates the points' own version strings give (a container tag's 20250212, a
    build's 2023-09-01, 'May 2024'), and the line itself where builds go by month: no
    date is looked up elsewhere, so a line whose versions carry none has none. A month
    gives way to a day within it.

    >>> dates_of("2023-09", ["PR #2891 build (2023-09-01)", "May 2024 build"])
    ('2023-09-01', '2024-05')
    """
    found = set()
    for text in (line, *versions):
        for year, month, day, name, named_year in DATES.findall(text):
            if name and name.lower() in MONTHS:
                found.add(f"{named_year}-{MONTHS.index(name.lower()) + 1:02d}")
            elif year and 1 <= int(month) <= 12:
                found.add(f"{year}-{month}" + (f"-{day}" if day else ""))
    return tuple(sorted(d for d in found if not any(o.startswith(f"{d}-") for o in found)))


def profiles(
    fits: dict[tuple[str, str], FamilyFit],
    points_name: str,
    items: list[Labelled],
    vendors: Sequence[VendorFactor] = (),
) -> dict[str, str]:
    """Each engine's profile file text, by engine id."""
    out = {}
    for engine in sorted({e for e, _ in fits} | set(ENGINES)):
        about = ENGINES.get(engine, About(engine))
        mine = [f for (e, _), f in sorted(fits.items()) if e == engine]
        carried = not mine
        if carried:
            if not about.carried_from:
                print(f"skipped {engine}: no points", file=sys.stderr)
                continue
            mine = [f for (e, _), f in sorted(fits.items()) if e == about.carried_from]
        families = [
            FamilyProfile(
                f.family,
                replace(f.fit.params, points=0) if carried else f.fit.params,
                f"none (carried over from {about.carried_from})" if carried else f.fit.describe(),
            )
            for f in mine
        ]
        groups = sorted({g for f in mine for g in f.groups})
        source = f"{points_name}, groups: {', '.join(groups)}"
        if carried:
            source = f"none of its own; {about.carried_from}'s fit to {source}"
        versions = [] if carried else sorted({v for f in mine for v in f.versions})
        out[engine] = engine_profile_text(
            about.name,
            families,
            source=source,
            versions=versions,
            notes=about.notes,
            aliases=about.aliases,
            header=HEADER,
            lines=[] if carried else lines_of(engine, mine, items, vendors),
        )
    return out


POINTS = (
    ROOT / "validation" / "points.yaml",
    ROOT / "validation" / "points-2026-thin-regimes.yaml",
    ROOT / "validation" / "points-apple.yaml",  # MLX on Apple: FITTED_SHARES
)
"""The points the shipped profiles are fitted on: the 232 of ../shared/validation, and of
the 2026 set where it is thin the share FITTED_SHARES names. The datacenter set and the
36 points of 2025-2026 engines stay out of sample (fitted with these, they move the
serving replay's TPOT error on points.yaml from 7% to 18% and the model-left-out p90 near
40%: docs/accuracy.md)."""


@record
class Share:
    """The points of a file that are fitted: one engine's release line, on some models."""

    engine: str
    release: str
    models: tuple[str, ...]

    def holds(self, p: MeasuredPoint) -> bool:
        return (p.engine, p.release) == (self.engine, self.release) and (
            p.scenario.model.id in self.models
        )


FITTED_SHARES = {
    "points-2026-thin-regimes.yaml": (
        Share("vllm", "0.19", ("gpt-oss-120b", "minimax-m2.5", "glm-4.7")),
        Share("atom", "2026-05", ("deepseek-v3", "gpt-oss-120b", "minimax-m2", "llama-3.1-70b")),
    ),
    # --- MLX on Apple ---
    "points-apple.yaml": (
        Share(
            "mlx",
            "0.31",
            ("glm-4.7-flash", "qwen3-8b", "qwen3-next-80b-a3b", "gpt-oss-20b", "gpt-oss-120b"),
        ),
    ),
}
"""Files fitted in part, by name, and the parts. vLLM 0.19 (ATOM's plugin, May 2026) on
MI355X: 36 points of three models (gpt-oss-120b at TP 1, 2 and 8, MiniMax-M2.5 at TP 2 and
4, GLM-4.7 at TP 8) make its own line on AMD Instinct and the AMD vendor factor; its 23
points of DeepSeek-V3.2, Kimi-K2.5 and Qwen3-Next-80B-A3B (other attention: DSA, MLA and
hybrid linear) stay out of sample. ATOM's standalone server (nightly of 2026-05-20): 46
points of DeepSeek-R1 (the deepseek-v3 preset; FP8 TP 8, MXFP4 TP 4), gpt-oss-120b,
MiniMax-M2.7 (FP8 TP 2, MXFP4 TP 1) and Llama-3.3-70B (MXFP4, the one dense model) make
the `atom` profile; its 36 points of GLM-5 and GLM-5.1, Kimi-K2.5 and Qwen3.5-397B-A17B
stay out of sample, as do the 74 Strix Halo points.

MLX on Apple (points-apple.yaml): mlx-lm 0.31.1's ten points on an M4 Max 128 GB (five
models, each at a short and a 22K-token prompt) make the `mlx` profile, a new engine on its
own points, its band from each model left out in turn; the file's 22 other MLX points (mlx-lm
0.28 and 0.30, vllm-mlx, mlx-omni-server, LM Studio's MLX engine; other M4 Max memories, M3
and M2 Ultra) and its two llama.cpp (Metal) points stay out of sample.

NVIDIA at concurrency 32-256 (points-nvidia-concurrency.yaml) stays out of sample: vLLM
0.15's 35 points on 8 x H100 fitted as a 0.15 line hold the pooled 77 us a layer (at TP > 1
the per-layer cost and the all-reduce latency are one column), drive the all-reduce latency to
0 us, and charge a hybrid MoE's expert passes the dense models' c_ffn (the vLLM 2026 set's
median 12.2% -> 17.7%; validation/README.md).

SGLang on NVIDIA datacenter GPUs (points-nvidia-sglang.yaml) stays out of sample: its nine
SGLang 0.4 Llama points fitted as a 0.4 line on nvidia-datacenter priced an expert's token
pass at a dense layer's (the line had no MoE point), 3x over the LMSYS EP72 decode pool
(validation/README.md)."""


def shared_points(path: Path, catalog: Catalog) -> list[MeasuredPoint]:
    """The points of ``path`` its FITTED_SHARES entry names (none for other files)."""
    shares = FITTED_SHARES.get(path.name, ())
    if not shares:
        return []
    return [p for p in read_points(path, catalog) if any(s.holds(p) for s in shares)]


def with_lines(
    fits: dict[tuple[str, str], FamilyFit], shares: Sequence[Labelled]
) -> dict[tuple[str, str], FamilyFit]:
    """The fits with each share's release line fitted on its own points, the engine's
    pooled fit on the family as the prior (calibration/validation.py: fit_line). The
    shares stay out of the pooled fits, their families' priors and the bands: the older
    lines' parameters are those of points.yaml alone (the new line's band comes from its
    own points: with_share_bands). Their TTFTs are not fitted (prefill_cases sees points.yaml
    only): 10 x concurrency requests of one length sent at once grow the TTFT with the
    concurrency as the MI300X DeepSeek rows' waves do (their ``ttft_exclude``). An engine
    new to a family (ATOM) is fitted on its share alone, its own points setting the costs
    a family prior would (fit_engines)."""
    out = dict(fits)
    out.update(fit_engines([p for p in shares if (p.engine, p.family) not in fits]))
    for (engine, family, _), mine in by_line(shares):
        if (engine, family) in fits:
            pooled = out[engine, family]
            lines = sorted(
                (*pooled.lines, fit_line(pooled, mine)), key=lambda x: release_order(x.line or "")
            )
            out[engine, family] = replace(pooled, lines=tuple(lines))
    return out


def by_line(shares: Sequence[Labelled]) -> list[tuple[tuple[str, str, str], list[Labelled]]]:
    """The shares' points by engine, family and release line."""
    keyed: dict[tuple[str, str, str], list[Labelled]] = {}
    for p in shares:
        keyed.setdefault((p.engine, p.family, p.release or ""), []).append(p)
    return sorted(keyed.items())


def with_share_bands(
    fits: dict[tuple[str, str], FamilyFit],
    base: dict[tuple[str, str], FamilyFit],
    shares: Sequence[Labelled],
) -> dict[tuple[str, str], FamilyFit]:
    """Each share's line (and a new engine's pooled fit) with bands from its own points'
    residuals, each predicted by the share refitted without it as with_lines fits it
    (``base``: the pooled fits it takes as the prior). Outside the fitted range: the
    conformal band of each model left out in turn (a new model). Inside it: that of each
    model's batch size left out in turn (model_batch), over the predictions that lay
    inside the refit's range: a measured model at another concurrency, TP or context,
    never wider than outside. The family's left-out band from points.yaml (0.64-3.30 on
    AMD Instinct) would hold the older lines' errors on a new one, not the new line's
    own; and a new model's error (ATOM x0.50-x2.50, four models) is not that of a model
    the line has measured (x0.83-x1.53)."""
    out = dict(fits)
    for (engine, family, line), mine in by_line(shares):
        apart = share_residuals(base, engine, family, mine, lambda p: p.point.scenario.model.id)
        outside = conformal_band([ratio for ratio, _ in apart])
        batches = share_residuals(base, engine, family, mine, model_batch)
        near = [ratio for ratio, beyond in batches if not beyond]
        inside = conformal_band(near) if near else outside
        inside = (max(inside[0], outside[0]), min(inside[1], outside[1]))
        bands = (inside, (min(inside[0], outside[0]), max(inside[1], outside[1])))
        how = (
            f"band: conformal 80% interval of the {len(near)} residuals of its own points "
            "predicted inside the refit's range, each model's batch size left out in turn; "
            f"outside the fitted range, of its {len(apart)} points, each model left out in "
            "turn (validation/fit_engines.py: with_share_bands)"
        )
        f = out[engine, family]
        lines = tuple(
            replace(
                x,
                fit=replace(x.fit, params=with_band(x.fit.params, bands), held=(*x.fit.held, how)),
            )
            if x.line == line
            else x
            for x in f.lines
        )
        if (engine, family) not in base:  # the pooled fit is the share's own
            held = (*(h for h in f.fit.held if not h.startswith("band:")), how)
            params = with_band(f.fit.params, bands)
            f = replace(f, fit=replace(f.fit, params=params, held=held))
        out[engine, family] = replace(f, lines=lines)
    return out


def model_batch(p: Labelled) -> tuple[str, int]:
    """What a share's inside band leaves out in turn: one model at one batch size."""
    return p.point.scenario.model.id, p.point.scenario.batch


def share_residuals(
    base: dict[tuple[str, str], FamilyFit],
    engine: str,
    family: str,
    mine: Sequence[Labelled],
    unit: Callable[[Labelled], object],
) -> list[tuple[float, bool]]:
    """measured / expected of each of a share's points with its ``unit`` left out, the
    share refitted on the rest as with_lines fits it, and whether the point lay outside
    the refit's range (engine/select.py extrapolated)."""
    out = []
    for key in sorted({unit(p) for p in mine}, key=str):
        train = [p for p in mine if unit(p) != key]
        if not train:
            continue
        if (engine, family) in base:
            params = fit_line(base[engine, family], train).fit.params
        else:
            params = fit_engines(train)[engine, family].fit.params
        out += [
            (
                p.terms.measured_s / predicted(p, (params,), engine).seconds,
                bool(p.facts and extrapolated(params.range, p.facts)),
            )
            for p in mine
            if unit(p) == key
        ]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=Path, nargs="+", default=list(POINTS))
    parser.add_argument("--out", type=Path, default=ROOT / "presets" / "engines")
    args = parser.parse_args(argv)
    # Built-in presets only: a user's $DECODECALC_PRESETS must not change what ships.
    catalog = Catalog((presets_dir(),))
    paths = [p.resolve() for p in args.points]
    items = labelled(
        [m for p in paths if p.name not in FITTED_SHARES for m in read_points(p, catalog)], catalog
    )
    shares = labelled([m for p in paths for m in shared_points(p, catalog)], catalog)
    base = fit_engines(items)
    fits = with_share_bands(shipped_bands(items, with_lines(base, shares)), base, shares)
    fits = with_prefill(fits, fit_prefills(prefill_cases(items, fits, catalog)))
    items += shares
    name = ", ".join(
        p.relative_to(ROOT).as_posix() if p.is_relative_to(ROOT) else p.name for p in paths
    )
    args.out.mkdir(parents=True, exist_ok=True)
    vendors = vendor_factors(fits, items)
    for v in vendors:
        print(f"vendor factor {v.family} over {v.source}: x{v.factor:.3f} ({v.fitted_on})")
    for engine, text in profiles(fits, name, items, vendors).items():
        target = args.out / f"{engine}.yaml"
        old = target.read_text(encoding="utf-8") if target.exists() else ""
        target.write_text(text + kept_blocks(old), encoding="utf-8")
        print(f"wrote {target}")
    return 0


KEPT = ("serving",)
"""Top-level blocks of a profile written by hand, not fitted (scheduler defaults): a refit
carries them over verbatim, comments and layout included."""


def kept_blocks(text: str) -> str:
    """The KEPT blocks of a profile's text, each from its key's line to the next top-level
    line (the comments just above a block stay with it)."""
    kept: list[str] = []
    pending: list[str] = []
    keeping = False
    for line in text.splitlines(keepends=True):
        top = bool(line.strip()) and not line[0].isspace() and not line.startswith("#")
        if top:
            keeping = line.split(":", 1)[0].strip() in KEPT
            if keeping:
                kept += pending
        if keeping:
            kept.append(line)
        pending = [*pending, line] if line.startswith("#") and not keeping else []
    if kept and not kept[-1].endswith("\n"):
        kept[-1] += "\n"
    return "".join(kept)


if __name__ == "__main__":
    sys.exit(main())
