"""The hand-made mutants (scripts/mutant_catalogue.py) still apply to the code as it is: each
one's text occurs exactly once in its file, and each test it names exists. A refactor that moves
the code leaves a mutant that tests nothing; `scripts/mutants.py` would only say so when run."""

from __future__ import annotations

import re

import pytest

from scripts.mutant_catalogue import MUTANTS
from tests.conftest import REPO


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_each_mutant_applies_to_the_code_and_names_tests_that_exist(mutant) -> None:
    assert (REPO / mutant.path).read_text().count(mutant.old) == 1
    for test in mutant.tests:
        path, _, name = test.partition("::")
        source = (REPO / path).read_text()
        if name:
            function = re.sub(r"\[.*\]$", "", name.split("::")[-1])
            assert re.search(rf"^\s*(async )?def {function}\(", source, re.M), test
