"""One type per run-event kind, and one list of the events that end a run."""

from __future__ import annotations

from typing import get_args

from backend.runtime import RUN_END_EVENTS, RunEnd, RunPayload
from backend.runtime.records import EventType


def test_every_kind_on_the_wire_has_exactly_one_type() -> None:
    names = [kind.TYPE for kind in get_args(RunPayload)]
    assert sorted(names) == sorted(get_args(EventType))


def test_the_types_that_end_a_run_are_the_names_that_end_a_run() -> None:
    assert {kind.TYPE for kind in get_args(RunEnd)} == RUN_END_EVENTS
