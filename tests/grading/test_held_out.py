r"""Every function the grader checks has held-out cases, and the reference passes them.

The clinic (chapter 12) has no function target: each of its exercises is a check the reader writes,
graded by the planted bugs it catches, so it has nothing to hold out.
"""
import pytest

from exercises.grading import modules
from exercises.grading.knowledge import compile_module


@pytest.mark.parametrize("module", modules.names())
def test_every_target_has_held_out_cases(module):
    found = modules.targets(module)
    missing = [name for name, t in found.items() if t.held_out is None]
    assert not missing, f"{module}: no HELD_OUT cases for {missing}"
    for name, t in found.items():
        cases = t.held_out()
        assert len(cases) >= 2, (module, name, len(cases))
        assert all(c.show == "(held out)" for c in cases), (module, name)  # never shown to a student


def test_the_reference_compiles_against_every_held_out_case():
    # compiling runs the reference on every public and held-out case (it raises where the reference does) and
    # stores one expected output per held-out case
    for module in modules.names():
        for compiled in compile_module(module)["targets"]:  # each target as the dict a release stores
            held = compiled["held"]
            assert held is not None and len(held["expected"]) == len(held["cases"]) >= 2, (module, compiled["name"])
