"""Check results as a report (table, JSON) and as JUnit XML for CI systems."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import IO, Any

from decodecalc.answers.headline import basis
from decodecalc.checks.measured import MeasuredCheck
from decodecalc.checks.run import CheckedDeployment
from decodecalc.checks.targets import (
    SPEED_TARGETS,
    TargetResult,
    held_to_engine,
)
from decodecalc.engine.profile import EngineKind
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
    if held_to_engine(c.estimate) and s.engine.kind is EngineKind.TYPICAL:
        return (
            f"typical expected ms_per_token (the median of {len(s.engine.params)} engine "
            f"profiles measured on {s.engine.family} GPUs)"
        )
    if held_to_engine(c.estimate):
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
    if r.unserved is not None:
        return r.unserved
    match r.target:
        case "max_ms_per_token" if r.served:
            return f"{r.value:,.3f} ms TPOT under the workload"
        case "max_ms_per_token":
            return f"{r.value:,.3f} ms{at}"
        case "min_tokens_per_s" if r.served:
            return f"{r.value:,.1f} tok/s (1000 / TPOT under the workload)"
        case "min_throughput_tokens_per_s" if r.served:
            return f"{r.value:,.1f} output tok/s under the workload"
        case "min_tokens_per_s" | "min_throughput_tokens_per_s":
            return f"{r.value:,.1f} tok/s{at}"
        case "must_fit" | "vllm_startup_fit":
            return "fits" if r.value else f"does not fit{at}"
        case "min_crossover_context":
            found = "no crossover" if r.value is None else f"{round(float(r.value)):,} tokens"
            return f"{found} at the workload's mean batch" if r.served else found
        case "max_ttft_ms" | "max_tpot_ms":
            return f"{r.value:,.1f} ms"
        case "min_output_throughput_tokens_per_s" | "min_output_throughput_per_gpu":
            return f"{r.value:,.1f} tok/s"
        case _:
            mean = ", the workload's mean" if r.served else ""
            return f"{float(r.value or 0):.1%}{at}{mean}"


def served_to(c: CheckedDeployment) -> str:
    """What a deployment's serving targets (under its workload:) were compared with."""
    engine = c.deployment.scenario.engine
    if engine.is_roofline:
        steps = "at the roofline"
    elif engine.kind is EngineKind.TYPICAL:
        steps = (
            f"the typical engine's on {engine.family} (the median of {len(engine.params)} profiles)"
        )
    else:
        steps = f"{engine.id}'s on {engine.family}"
    return f"the server's steady state under its workload (decodecalc serving), its steps {steps}"


def _record(c: CheckedDeployment, r: TargetResult) -> dict[str, Any]:
    return {
        "file": c.deployment.file,
        "deployment": c.deployment.name,
        "target": r.target,
        "limit": r.limit,
        "value": r.value,
        "context": r.context,
        "passed": r.passed,
        # Added: the step a speed or serving target was held to, the server's steps under
        # a workload (null for the other targets).
        "basis": basis(c.deployment.scenario) if r.timed else None,
        # Added: 'contexts' (a step at the file's batch and contexts) or 'workload'.
        "held_to": r.held_to,
    }


def _stepped(r: TargetResult) -> bool:
    """A speed target held to a decode step (under a workload max_ms_per_token is the
    server's TPOT: checks/run.py)."""
    return r.target in SPEED_TARGETS and not r.served


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
    return held_to_engine(c.estimate) and engine.kind is EngineKind.TYPICAL


def _held_to_lines(
    pairs: Sequence[tuple[CheckedDeployment, TargetResult]], timed: list[CheckedDeployment]
) -> list[str]:
    """What the speed targets and the serving targets were held to, a line for each figure."""
    figures = dict.fromkeys(held_to(c) for c in timed)
    served = dict.fromkeys(served_to(c) for c, r in pairs if r.served)
    return [
        *(f"speed targets held to: {figure}" for figure in figures),
        *(f"serving targets held to: {figure}" for figure in served),
    ]


def check_notes(checked: Sequence[CheckedDeployment]) -> tuple[Note, ...]:
    """The notes of a run's deployments: what their speed targets were held to, then each
    deployment's own, a note they share said once."""
    timed = [c for c in checked for r in c.results if _stepped(r)]
    labelled = [(c.deployment.name, c.notes) for c in checked]
    return unique([*_basis_notes(timed), *many_notes(labelled)])


def _system_err(suite: Any, notes: Sequence[Note]) -> None:
    """The notes a run said on stderr, as the suite's ``system-err``: the element the JUnit
    schema CI tools read gives for a suite's standard error, after its test cases (Jenkins'
    junit-10.xsd, from Ant's XMLJUnitResultFormatter: ``testsuite`` holds ``properties``,
    ``testcase``*, ``system-out``, ``system-err`` in that order), so a job that reads the
    XML alone still sees what a reader of the figures must know."""
    import xml.etree.ElementTree as ET

    if notes:
        err = ET.SubElement(suite, "system-err")
        err.text = "".join(f"decodecalc: note: {n.message}\n" for n in notes)


def check_report(checked: list[CheckedDeployment]) -> Report:
    pairs = [(c, r) for c in checked for r in c.results]
    records = tuple(_record(c, r) for c, r in pairs)
    failed = sum(not r["passed"] for r in records)
    timed = [c for c, r in pairs if _stepped(r)]
    notes = check_notes(checked)
    doc = document(
        passed=failed == 0,
        summary={"deployments": len(checked), "targets": len(records), "failed": failed},
        results=list(records),
        deployments=[
            {
                "file": c.deployment.file,
                "deployment": c.deployment.name,
                "inputs": scenario_inputs(c.deployment.scenario),
                # Null where every target was held to the server under the workload.
                "contexts": list(c.deployment.contexts) if c.at_contexts else None,
                "crossover_context": c.estimate.crossover_context if c.at_contexts else None,
                "held_to": held_to(c) if c.stepped else None,
                # Added: what the targets held to the server under the workload were held to.
                "served_to": served_to(c) if c.under_workload else None,
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
    report = Report(
        doc,
        columns,
        shown,
        footer=(
            f"{len(checked)} deployment{'s' if len(checked) != 1 else ''}, {verdict}",
            *_held_to_lines(pairs, timed),
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
            for key, applies, figure in (
                ("held_to", c.stepped, held_to),
                ("served_to", c.under_workload, served_to),
            ):
                if applies:
                    name = f"{c.deployment.name}.{key}"
                    ET.SubElement(properties, "property", name=name, value=figure(c))
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
    _system_err(suite, check_notes(group))


# --- check --measured: measured results against the expected band -------------------------


def _measured_record(c: MeasuredCheck) -> dict[str, Any]:
    p, s = c.point, c.point.scenario
    return {
        "file": c.where,
        "deployment": f"{s.model.id} on {s.tp} x {s.gpu.id if s.gpu else 'GPU'}, batch "
        f"{s.batch}, context {p.context_tokens:,}",
        "measured": p.measured,
        "measured_ms": p.measured_seconds * 1000,
        "expected_ms": c.expected_s * 1000,
        "low_ms": c.low_s * 1000,
        "high_ms": c.high_s * 1000,
        "prefill_ms": c.prefill_s * 1000,
        "ratio": c.ratio,
        "engine": c.engine.id,
        "passed": c.passed,
    }


def _band_text(rec: dict[str, Any]) -> str:
    return f"{rec['expected_ms']:.2f} ({rec['low_ms']:.2f}-{rec['high_ms']:.2f})"


def measured_report(checks: Sequence[MeasuredCheck]) -> Report:
    """Each measured point against its expected band: the ratio measured / expected,
    pass inside the band, FAIL outside."""
    records = tuple(_measured_record(c) for c in checks)
    failed = sum(not r["passed"] for r in records)
    doc = document(
        passed=failed == 0,
        summary={"points": len(records), "failed": failed},
        measured=list(records),
    )
    columns = (
        Column("file", "File", numeric=False, drop=3),
        Column("deployment", "Deployment", numeric=False, drop=2),
        Column("measured_ms", "Measured ms", lambda v: f"{v:.2f}"),
        Column("expected", "Expected ms (band)", numeric=False, drop=1),
        Column("ratio", "Ratio", lambda v: f"x{v:.2f}", drop=KEPT),
        Column("passed", "Result", lambda v: "pass" if v else "FAIL", numeric=False, drop=KEPT),
    )
    shown = tuple({**r, "expected": _band_text(r)} for r in records)
    engines = ", ".join(dict.fromkeys(r["engine"] for r in records))
    verdict = (
        "all inside the expected band"
        if failed == 0
        else f"{failed} of {len(records)} outside the expected band"
    )
    report = Report(
        doc,
        columns,
        shown,
        footer=(
            f"{len(records)} measured point{'s' if len(records) != 1 else ''}, {verdict}",
            f"held to: {engines} expected ms_per_token"
            + (
                ", plus other requests' prefills in a serving mean"
                if any(c.prefill_s for c in checks)
                else ""
            ),
        ),
        highlight=frozenset(i for i, r in enumerate(records) if not r["passed"]),
    )
    return with_notes(report, unique([n for c in checks for n in c.notes]))


def _file_of(where: str) -> str:
    """The file of ``file:line``, ``file[row]`` or ``file #N``."""
    import re

    return re.sub(r"(:\d+|\[\d+\]| #\d+)$", "", where)


def measured_junit(checks: Sequence[MeasuredCheck], out: IO[str]) -> None:
    """JUnit XML: a testsuite per file, a testcase per measured point, a failure with the
    ratio for each outside its band."""
    import xml.etree.ElementTree as ET

    records = [_measured_record(c) for c in checks]
    failures = sum(not r["passed"] for r in records)
    root = ET.Element(
        "testsuites",
        name="decodecalc check --measured",
        tests=str(len(records)),
        failures=str(failures),
        errors="0",
    )
    files: dict[str, list[dict[str, Any]]] = {}
    notes: dict[str, list[Note]] = {}
    for r, c in zip(records, checks, strict=True):
        files.setdefault(_file_of(r["file"]), []).append(r)
        notes.setdefault(_file_of(r["file"]), []).extend(c.notes)
    for file, group in files.items():
        suite = ET.SubElement(
            root,
            "testsuite",
            name=file,
            tests=str(len(group)),
            failures=str(sum(not r["passed"] for r in group)),
            errors="0",
            skipped="0",
        )
        for r in group:
            case = ET.SubElement(
                suite, "testcase", classname=r["file"], name=r["deployment"], time="0"
            )
            if not r["passed"]:
                message = (
                    f"measured {r['measured_ms']:.2f} ms = x{r['ratio']:.2f} expected; "
                    f"band {r['low_ms']:.2f}-{r['high_ms']:.2f} ms ({r['engine']})"
                )
                failure = ET.SubElement(case, "failure", message=message, type="OutsideBand")
                failure.text = f"{r['file']}: {r['deployment']}: {message}"
        _system_err(suite, unique(notes[file]))
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")
