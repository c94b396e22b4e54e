"""Which engine a scenario's expected figures come from: a profile's parameters for the GPU
family, the median of the profiles measured on it when the profile has none (engine_for),
or every profile measured on the family (typical)."""

from __future__ import annotations

from collections.abc import Sequence

from decodecalc.engine.profile import Engine, EngineParams, EngineProfile


def measured_on(profiles: Sequence[EngineProfile], family: str) -> list[tuple[str, EngineParams]]:
    """Each profile fitted on this family's own measurements, by id (a profile carried over
    from another engine, with no points of its own, would count that engine twice)."""
    return [
        (p.id, found)
        for p in profiles
        if (found := dict(p.families).get(family)) is not None and found.points > 0
    ]


def typical(profiles: Sequence[EngineProfile], family: str) -> Engine:
    """The band across every profile measured on this family. On a family none has
    measured, across every family every profile was measured on: engines measured on other
    chips are nearer than the roofline, which none of them reaches."""
    chosen = measured_on(profiles, family) or [
        (f"{p.id} ({measured})", params)
        for p in profiles
        for measured, params in p.families
        if params.points
    ]
    names = tuple(name for name, _ in chosen)
    kind = "typical" if chosen else "roofline"  # (no profile measured anywhere)
    return Engine("typical", tuple(f for _, f in chosen), family, names, kind=kind)


def engine_for(
    profile: EngineProfile, family: str, profiles: Sequence[EngineProfile]
) -> tuple[Engine, str | None]:
    """A profile's engine on a GPU family, and the family its own parameters come from
    when it has none for this one (None when it has).

    Without data for the family, the profile's best-measured family is one vote among the
    profiles measured on this one: the median of them all is the centre and the band spans
    them. Across the published points, one engine's step differs by 2x or more between GPU
    vendors (its kernels are written per vendor) while engines measured on one family
    differ by a few percent on the same model, so the family's engines say as much as the
    engine's other chips; neither alone transfers (docs/accuracy.md). `decodecalc validate`
    predicts each left-out group by this same rule, so its leave-one-group-out error is
    what a user of such a fallback gets."""
    own = dict(profile.families).get(family)
    if own is not None:
        return Engine(profile.id, (own,), family, (profile.id,), profile.serving), None
    params, fitted = profile.params_for(family)
    others = [(name, p) for name, p in measured_on(profiles, family) if name != profile.id]
    return (
        Engine(
            profile.id,
            (params, *(p for _, p in others)),
            family,
            (f"{profile.id} ({fitted})", *(name for name, _ in others)),
            profile.serving,
            kind="fallback",
        ),
        fitted,
    )
