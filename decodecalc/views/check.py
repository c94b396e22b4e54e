"""Check results as a report (table, JSON) and as JUnit XML for CI systems."""

from __future__ import annotations

from typing import IO, Any

from decodecalc.checks.run import CheckedDeployment
from decodecalc.checks.targets import TargetResult
from decodecalc.views.estimate import scenario_inputs
from decodecalc.views.report import Column, Report, document


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
        case "min_crossover_context":
            return f"crossover >= {r.limit:,} tokens"
        case _:
            return f"KV share <= {r.limit:.1%}"


def _value_text(r: TargetResult) -> str:
    at = f" at {r.context:,} tokens" if r.context is not None else ""
    match r.target:
        case "max_ms_per_token":
            return f"{r.value:.3f} ms{at}"
        case "min_tokens_per_s" | "min_throughput_tokens_per_s":
            return f"{r.value:,.1f} tok/s{at}"
        case "must_fit":
            return "fits" if r.value else f"does not fit{at}"
        case "min_crossover_context":
            return "no crossover" if r.value is None else f"{round(float(r.value)):,} tokens"
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
    }


def check_report(checked: list[CheckedDeployment]) -> Report:
    pairs = [(c, r) for c in checked for r in c.results]
    records = tuple(_record(c, r) for c, r in pairs)
    failed = sum(not r["passed"] for r in records)
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
                "passed": c.passed,
            }
            for c in checked
        ],
    )
    columns = (
        Column("file", "File", numeric=False, drop=1),
        Column("deployment", "Deployment", numeric=False),
        Column("target", "Target", numeric=False, drop=2),
        Column("limit", "Limit", numeric=False),
        Column("value", "Value", numeric=False),
        Column("passed", "Result", lambda v: "pass" if v else "FAIL", numeric=False),
    )
    shown = tuple(
        {**rec, "limit": _limit_text(r), "value": _value_text(r)}
        for rec, (_, r) in zip(records, pairs, strict=True)
    )
    verdict = "all targets met" if failed == 0 else f"{failed} of {len(records)} targets missed"
    return Report(
        doc,
        columns,
        shown,
        footer=(f"{len(checked)} deployment{'s' if len(checked) != 1 else ''}, {verdict}",),
        highlight=frozenset(i for i, rec in enumerate(records) if not rec["passed"]),
    )


def to_junit(checked: list[CheckedDeployment], out: IO[str]) -> None:
    """JUnit XML: a testsuite per file, a testcase per target, a failure per missed one."""
    import xml.etree.ElementTree as ET

    total = sum(len(c.results) for c in checked)
    failures = sum(not r.passed for c in checked for r in c.results)
    root = ET.Element(
        "testsuites",
        name="decodecalc check",
        tests=str(total),
        failures=str(failures),
        errors="0",
    )
    files: dict[str, list[CheckedDeployment]] = {}
    for c in checked:
        files.setdefault(c.deployment.file, []).append(c)
    for file, group in files.items():
        results = [(c, r) for c in group for r in c.results]
        suite = ET.SubElement(
            root,
            "testsuite",
            name=file,
            tests=str(len(results)),
            failures=str(sum(not r.passed for _, r in results)),
            errors="0",
            skipped="0",
        )
        for c, r in results:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"{file}.{c.deployment.name}",
                name=f"{r.target}: {_limit_text(r)}",
                time="0",
            )
            if not r.passed:
                failure = ET.SubElement(
                    case,
                    "failure",
                    message=f"{_value_text(r)}; wanted {_limit_text(r)}",
                    type="TargetMissed",
                )
                failure.text = (
                    f"{c.deployment.name} ({file}): {r.target} {_value_text(r)}, "
                    f"wanted {_limit_text(r)}"
                )
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")
