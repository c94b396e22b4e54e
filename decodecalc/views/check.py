"""Check results as a report (table, JSON) and as JUnit XML for CI systems."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import IO, Any

from decodecalc.answers.headline import basis
from decodecalc.checks.run import CheckedDeployment
from decodecalc.checks.targets import SPEED_TARGETS, TargetResult, held_to_engine
from decodecalc.notes import Note, many_notes, unique
from decodecalc.views.estimate import scenario_inputs
from decodecalc.views.report import KEPT, Column, Report, document, with_notes

ROOFLINE = Note(
    "check-roofline",
    "speed targets are held to decodecalc's estimate, the bandwidth roofline (bytes per "
    "step / (bandwidth x efficiency)) plus any overhead and TP communication, not to a "
    "measured engine: a pass says the hardware can, not that a given server does",
)
TYPICAL = Note(
    "check-typical",
    "speed targets are held to the expected step of the default engine selection "
    "('typical': the median of the engine profiles measured on the GPU's family), as no "
    "engine is named; name one with engine: or --engine, or give engine: roofline to hold "
    "them to the roofline",
)


def held_to(c: CheckedDeployment) -> str:
    """The figure a deployment's speed targets were compared with, in words."""
    s = c.deployment.scenario
    if held_to_engine(c.estimate) and s.engine is not None and s.engine.kind == "typical":
        return (
            f"typical expected ms_per_token (the median of {len(s.engine.params)} engine "
            f"profiles measured on {s.engine.family} GPUs)"
        )
    if held_to_engine(c.estimate) and s.engine is not None:
        params, *others = s.engine.params
        if others:  # no data on this family: a fallback (engine/select.py engine_for)
            return (
                f"{s.engine.id} expected ms_per_token (the median of its {s.engine.names[0]} "
                f"profile, fitted on {params.points} published points, and the {len(others)} "
                f"profiles for {s.engine.family} GPUs)"
            )
        return (
            f"{s.engine.id} expected ms_per_token (profile for {s.engine.family} GPUs, fitted "
            f"on {params.points} published points)"
        )
    figure = f"roofline ms_per_token at efficiency {s.efficiency:g}"
    if s.overhead_s:
        figure += f" + {s.overhead_s * 1000:g} ms overhead per step"
    if s.link is not None:
        figure += f" + TP all-reduces over {s.link.id}"
    return figure


def _limit_text(r: TargetResult) -> str:
    match r.target:
        case "max_ms_per_token":
            return f"<= {r.limit:g} ms/token"
        case "min_tokens_per_s":
            return f">= {r.limit:g} tok/s per sequence"
        case "min_throughput_tokens_per_s":
            return f">= {r.limit:g} tok/s in all"
        case "must_fit":
            return "fits in memory" if r.limit else "(fit not required)"
        case "vllm_startup_fit":
            return f"weights + 1 sequence of {r.context:,} tokens fit (vLLM's start-up check)"
        case "min_crossover_context":
            return f"crossover >= {r.limit:,} tokens"
        case "max_ttft_ms":
            return f"<= {r.limit:g} ms to first token"
        case "max_tpot_ms":
            return f"<= {r.limit:g} ms per output token"
        case "min_output_throughput_tokens_per_s":
            return f">= {r.limit:g} output tok/s"
        case "min_output_throughput_per_gpu":
            return f">= {r.limit:g} output tok/s per GPU"
        case _:
            return f"KV share <= {r.limit:.1%}"


def _value_text(r: TargetResult) -> str:
    at = f" at {r.context:,} tokens" if r.context is not None else ""
    match r.target:
        case "max_ms_per_token":
            return f"{r.value:.3f} ms{at}"
        case "min_tokens_per_s" | "min_throughput_tokens_per_s":
            return f"{r.value:,.1f} tok/s{at}"
        case "must_fit" | "vllm_startup_fit":
            return "fits" if r.value else f"does not fit{at}"
        case "min_crossover_context":
            return "no crossover" if r.value is None else f"{round(float(r.value)):,} tokens"
        case "max_ttft_ms" | "max_tpot_ms":
            return f"{r.value:,.1f} ms"
        case "min_output_throughput_tokens_per_s" | "min_output_throughput_per_gpu":
            return f"{r.value:,.1f} tok/s"
        case _:
            return f"{float(r.value or 0):.1%}{at}"


def _record(c: CheckedDeployment, r: TargetResult) -> dict[str, Any]:
    return {
        "file": c.deployment.file,
        "deployment": c.deployment.name,
        "target": r.target,
        "limit": r.limit,
        "value": r.value,
        "context": r.context,
        "passed": r.passed,
        # Added: the step a speed target was held to (null for the other targets).
        "basis": basis(c.deployment.scenario) if r.target in SPEED_TARGETS else None,
    }


def _basis_notes(timed: list[CheckedDeployment]) -> list[Note]:
    """Say which speed targets were held to the roofline and which to the default engine
    selection's expected step, naming the deployments each applies to when the others
    were held to something else."""
    every = {c.deployment.name for c in timed}
    notes = []
    for note, applies in (
        (ROOFLINE, lambda c: not held_to_engine(c.estimate)),
        (TYPICAL, _held_to_typical),
    ):
        names = list(dict.fromkeys(c.deployment.name for c in timed if applies(c)))
        if names and len(names) == len(every):
            notes.append(note)
        elif names:
            notes.append(Note(note.code, f"{', '.join(names)}: {note.message}"))
    return notes


def _held_to_typical(c: CheckedDeployment) -> bool:
    engine = c.deployment.scenario.engine
    return held_to_engine(c.estimate) and engine is not None and engine.kind == "typical"


def check_report(checked: list[CheckedDeployment]) -> Report:
    pairs = [(c, r) for c in checked for r in c.results]
    records = tuple(_record(c, r) for c, r in pairs)
    failed = sum(not r["passed"] for r in records)
    timed = [c for c, r in pairs if r.target in SPEED_TARGETS]
    labelled = [(c.deployment.name, c.notes) for c in checked]
    notes = unique([*_basis_notes(timed), *many_notes(labelled)])
    doc = document(
        passed=failed == 0,
        summary={"deployments": len(checked), "targets": len(records), "failed": failed},
        results=list(records),
        deployments=[
            {
                "file": c.deployment.file,
                "deployment": c.deployment.name,
                "inputs": scenario_inputs(c.deployment.scenario),
                "contexts": list(c.deployment.contexts),
                "crossover_context": c.estimate.crossover_context,
                "held_to": held_to(c),
                # Added: which step the speed targets were held to (answers/headline.py).
                "basis": basis(c.deployment.scenario),
                "notes": [n.as_dict() for n in c.notes],
                "passed": c.passed,
            }
            for c in checked
        ],
    )
    columns = (
        # A narrow terminal gives up the file, the limit, the name; the target and the verdict last.
        Column("file", "File", numeric=False, drop=3),
        Column("deployment", "Deployment", numeric=False, drop=1),
        Column("target", "Target", numeric=False, drop=KEPT),
        Column("limit", "Limit", numeric=False, drop=2),
        Column("value", "Value", numeric=False),
        Column("passed", "Result", lambda v: "pass" if v else "FAIL", numeric=False, drop=KEPT),
    )
    shown = tuple(
        {**rec, "limit": _limit_text(r), "value": _value_text(r)}
        for rec, (_, r) in zip(records, pairs, strict=True)
    )
    verdict = "all targets met" if failed == 0 else f"{failed} of {len(records)} targets missed"
    figures = dict.fromkeys(held_to(c) for c in timed)
    report = Report(
        doc,
        columns,
        shown,
        footer=(
            f"{len(checked)} deployment{'s' if len(checked) != 1 else ''}, {verdict}",
            *(f"speed targets held to: {figure}" for figure in figures),
        ),
        highlight=frozenset(i for i, rec in enumerate(records) if not rec["passed"]),
    )
    return with_notes(report, notes)


def to_junit(
    checked: Sequence[CheckedDeployment],
    out: IO[str],
    files: Mapping[str, Sequence[str]] | None = None,
) -> None:
    """JUnit XML: a testsuite per file, a testcase per target, a failure per missed one.
    ``files`` names every file in the order given, each with the problems that kept it (or
    a deployment in it) from being checked: such a file gets an error case listing them
    all, so CI shows a broken file beside the results of the others."""
    import xml.etree.ElementTree as ET

    problems = {name: found for name, found in (files or {}).items() if found}
    suites: dict[str, list[CheckedDeployment]] = {name: [] for name in files or {}}
    for c in checked:
        suites.setdefault(c.deployment.file, []).append(c)
    errors = len(problems)
    total = sum(len(c.results) for c in checked) + errors
    failures = sum(not r.passed for c in checked for r in c.results)
    root = ET.Element(
        "testsuites",
        name="decodecalc check",
        tests=str(total),
        failures=str(failures),
        errors=str(errors),
    )
    for file, group in suites.items():
        _junit_suite(root, file, group, problems.get(file, ()))
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")


def _junit_suite(
    root: Any, file: str, group: Sequence[CheckedDeployment], found: Sequence[str]
) -> None:
    """One file's testsuite: what its deployments were held to, an error case for the
    problems that kept it from being checked, and a testcase per target."""
    import xml.etree.ElementTree as ET

    results = [(c, r) for c in group for r in c.results]
    suite = ET.SubElement(
        root,
        "testsuite",
        name=file,
        tests=str(len(results) + (1 if found else 0)),
        failures=str(sum(not r.passed for _, r in results)),
        errors=str(1 if found else 0),
        skipped="0",
    )
    if group:
        properties = ET.SubElement(suite, "properties")
        for c in group:
            name = f"{c.deployment.name}.held_to"
            ET.SubElement(properties, "property", name=name, value=held_to(c))
    if found:
        case = ET.SubElement(suite, "testcase", classname=file, name="valid input", time="0")
        error = ET.SubElement(case, "error", message=found[0], type="InvalidInput")
        error.text = "\n".join(found)
    for c, r in results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"{file}.{c.deployment.name}",
            name=f"{r.target}: {_limit_text(r)}",
            time="0",
        )
        if not r.passed:
            wanted = f"wanted {_limit_text(r)}"
            failure = ET.SubElement(
                case, "failure", message=f"{_value_text(r)}; {wanted}", type="TargetMissed"
            )
            failure.text = f"{c.deployment.name} ({file}): {r.target} {_value_text(r)}, {wanted}"
