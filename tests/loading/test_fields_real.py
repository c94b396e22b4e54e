"""Fields.real: an efficiency or band read as a float gives what reading it exactly and
rounding gives (float(fraction())), value for value and message for message."""

from __future__ import annotations

import pytest

from decodecalc.errors import InputError
from decodecalc.loading.datafile import Document
from decodecalc.loading.fields import Fields

VALUES = [0.7, 0.8236, 1, 1.0, 0.1 + 0.2, 5e-324, 2.2250738585072014e-308, "0.5", "1e-3", 7, 100]
"""Floats as YAML and JSON give them (one the shortest repr of a sum, the smallest
subnormal), whole numbers, and numbers written as text, which are read exactly."""

REFUSED = [0, 0.0, -0.5, 1.5, 101, float("nan"), float("inf"), "1_0", "nan", True, [1], "x"]


def fields(value: object) -> Fields:
    return Fields(Document("f.yaml", {"x": value}))


@pytest.mark.parametrize("value", VALUES)
def test_real_is_the_exact_value_rounded(value: object) -> None:
    maximum = 100 if isinstance(value, int) and value > 1 else 1
    f = fields(value)
    assert f.real("x", maximum) == float(fields(value).fraction("x", maximum))
    f.finish()  # (read, so no unknown field)


@pytest.mark.parametrize("value", REFUSED)
def test_real_refuses_what_fraction_refuses_in_its_words(value: object) -> None:
    with pytest.raises(InputError) as exact:
        fields(value).fraction("x", 1)
    with pytest.raises(InputError) as fast:
        fields(value).real("x", 1)
    assert str(fast.value) == str(exact.value)


def test_real_of_a_missing_field_says_so() -> None:
    with pytest.raises(InputError, match="missing required field 'y'"):
        fields(0.5).real("y", 1)
