"""The serving stack, started once per test module (tests/deploy/serving.py says how)."""

from typing import Iterator

import pytest

from tests.deploy.serving import Stack, stack_started


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    yield from stack_started()
