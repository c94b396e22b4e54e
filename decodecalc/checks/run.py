"""Running deployment checks: estimate each deployment and hold it against its targets."""

from __future__ import annotations

from decodecalc.checks.deployments import Deployment
from decodecalc.checks.targets import TargetResult, check
from decodecalc.errors import InputError
from decodecalc.physics.estimator import Estimate, estimate
from decodecalc.record import record


@record
class CheckedDeployment:
    deployment: Deployment
    estimate: Estimate
    results: tuple[TargetResult, ...]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)


def run_checks(deployments: list[Deployment]) -> list[CheckedDeployment]:
    checked = []
    for d in deployments:
        est = estimate(d.scenario, d.contexts)
        try:
            results = check(est, d.targets)
        except InputError as exc:
            raise InputError(f"{d.file}: {d.name}: {exc}") from None
        checked.append(CheckedDeployment(d, est, results))
    return checked
