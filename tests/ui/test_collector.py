"""The server collects its young generation less often, and only that generation."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from chatsapp.hosting.collector import YOUNG_THRESHOLD, collect_young_less_often


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


def test_only_the_young_threshold_is_raised(thresholds: tuple[int, int, int]):
    gc.set_threshold(700, 10, 10)
    collect_young_less_often()
    assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)


def test_the_app_tunes_each_worker_when_it_starts():
    from chatsapp.chatsapp import app

    names = [getattr(task, "__name__", "") for task in app.get_lifespan_tasks()]
    assert "_collect_young_less_often" in names
