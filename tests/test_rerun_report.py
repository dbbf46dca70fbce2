"""A browser story that failed and passed its rerun still leaves its first failure in the
run's summary, with every section its report carried (tests/support/rerun_report.py)."""

from __future__ import annotations

import pytest

from tests.support.rerun_report import FirstFailures


class Terminal:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_sep(self, sep: str, title: str) -> None:
        self.lines.append(f"{sep * 3} {title}")

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def report(outcome: str, sections: list[tuple[str, str]]) -> pytest.TestReport:
    return pytest.TestReport(
        nodeid="tests/e2e/test_x.py::test_story",
        location=("tests/e2e/test_x.py", 1, "test_story"),
        keywords={},
        outcome=outcome,  # type: ignore[arg-type]
        longrepr="AssertionError: expected v3",
        when="call",
        sections=sections,
    )


def test_a_rerun_story_prints_its_traceback_and_every_section_but_captured_output():
    failures = FirstFailures()
    failures.note(
        report(
            "rerun",
            [
                ("tabs (latest socket frames)", "── tab http://127.0.0.2/agents"),
                ("Captured stdout call", "noise"),
                ("app log (tail of app.log)", "a log line"),
            ],
        )
    )
    terminal = Terminal()
    failures.write(terminal)

    assert terminal.lines == [
        "___ first failure of tests/e2e/test_x.py::test_story (it was run again)",
        "AssertionError: expected v3",
        "--- tabs (latest socket frames)",
        "── tab http://127.0.0.2/agents",
        "--- app log (tail of app.log)",
        "a log line",
    ]


def test_reports_of_runs_that_were_not_rerun_are_not_printed():
    failures = FirstFailures()
    failures.note(report("failed", [("app log (tail of app.log)", "x")]))
    failures.note(report("passed", []))
    terminal = Terminal()
    failures.write(terminal)
    assert terminal.lines == []
