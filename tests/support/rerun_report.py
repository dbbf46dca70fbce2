"""Why each rerun browser story failed the first time: pytest-rerunfailures names reruns, not
their causes, and a story that passes its rerun would otherwise leave no trace of the first
failure. The root conftest feeds every report to :meth:`FirstFailures.note` and prints
:meth:`FirstFailures.write` in the terminal summary."""

from __future__ import annotations

from typing import Protocol

import pytest

LONGREPR_CHARS = 8_000
"""The end of a first failure's traceback that is printed (its assertion and call log)."""


class Writer(Protocol):
    """What a summary needs of pytest's terminal reporter."""

    def write_sep(self, sep: str, title: str) -> object: ...

    def write_line(self, line: str) -> object: ...


class FirstFailures:
    """The reports of runs that failed and were run again, in the order they came."""

    def __init__(self) -> None:
        self._reports: list[pytest.TestReport] = []

    def note(self, report: pytest.TestReport) -> None:
        if report.outcome == "rerun":
            self._reports.append(report)

    def write(self, terminal: Writer) -> None:
        """Each first failure: its traceback's end, then every section the report's own hooks
        added (the tabs' frames, the app's log, threads and tasks: tests/e2e/conftest.py);
        pytest's captured output is left out."""
        for report in self._reports:
            terminal.write_sep("_", f"first failure of {report.nodeid} (it was run again)")
            terminal.write_line(report.longreprtext[-LONGREPR_CHARS:])
            for title, text in report.sections:
                if not title.startswith("Captured "):
                    terminal.write_sep("-", title)
                    terminal.write_line(text)
