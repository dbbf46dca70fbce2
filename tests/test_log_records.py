"""No log line can fail to be written: a record's text follows the storage text rule.

A lone surrogate (from a model's stream, say) in a logged argument or exception message once
crashed a pytest-xdist worker sending the captured log, and a strict UTF-8 handler loses the
line. These records are made by the factory :func:`backend.log_records.install` sets up, as
in the app and in every test process (tests/conftest.py).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from backend import log_records


class _StrictUtf8Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes UTF-8 with no error handler, as a log file opened plainly does; keeps what it
    could not write instead of printing a logging error."""

    def __init__(self) -> None:
        self.raw = io.BytesIO()
        super().__init__(io.TextIOWrapper(self.raw, encoding="utf-8", errors="strict"))
        self.errors: list[BaseException] = []

    def handleError(self, record: logging.LogRecord) -> None:
        import sys

        self.errors.append(sys.exc_info()[1])  # type: ignore[arg-type]

    def written(self) -> str:
        self.flush()
        return self.raw.getvalue().decode("utf-8")


@pytest.fixture
def logged() -> Iterator[tuple[logging.Logger, _StrictUtf8Handler]]:
    logger = logging.getLogger("tests.log_records")
    handler = _StrictUtf8Handler()
    logger.addHandler(handler)
    try:
        yield logger, handler
    finally:
        logger.removeHandler(handler)


@pytest.fixture
def default_factory() -> Iterator[None]:
    """The process's record factory as Python starts it, put back afterwards."""
    installed = logging.getLogRecordFactory()
    logging.setLogRecordFactory(logging.LogRecord)
    try:
        yield
    finally:
        logging.setLogRecordFactory(installed)


class TestALoneSurrogateInARecord:
    def test_in_an_argument_is_written_as_a_replacement_character(self, logged):
        logger, handler = logged
        logger.warning("the model said %s, then %s", "half \ud83d", "other half \ude00")
        assert handler.errors == []
        assert handler.written() == "the model said half \ufffd, then other half \ufffd\n"

    def test_in_an_exception_message_is_written_with_its_traceback(self, logged):
        logger, handler = logged
        try:
            raise RuntimeError("upstream said \ud800")
        except RuntimeError:
            logger.exception("run failed")
        assert handler.errors == []
        written = handler.written()
        assert written.startswith("run failed\nTraceback (most recent call last):\n")
        assert written.endswith("RuntimeError: upstream said \ufffd\n")

    def test_a_pair_written_as_two_code_units_is_one_character(self, logged):
        logger, handler = logged
        logger.warning("smile %s", "\ud83d" + "\ude00")
        assert handler.written() == "smile 😀\n"


class TestAWellFormedRecord:
    def test_is_left_exactly_as_made(self):
        logger = logging.getLogger("tests.log_records")
        argument = ["café", 1]
        record = logger.makeRecord(logger.name, logging.INFO, "f", 1, "got %s", (argument,), None)
        assert record.msg == "got %s"
        assert record.args == (argument,)  # still formatted lazily, by the handler
        assert record.exc_text is None

    def test_with_arguments_that_do_not_fit_is_left_to_the_handler_to_report(self):
        logger = logging.getLogger("tests.log_records")
        record = logger.makeRecord(logger.name, logging.INFO, "f", 1, "%d items", ("x",), None)
        assert (record.msg, record.args) == ("%d items", ("x",))


class TestInstall:
    def test_keeps_the_factory_set_before_and_is_idempotent(self, default_factory):
        def tagging(*args, **kwargs) -> logging.LogRecord:
            record = logging.LogRecord(*args, **kwargs)
            record.tagged = True
            return record

        logging.setLogRecordFactory(tagging)
        log_records.install()
        installed = logging.getLogRecordFactory()
        log_records.install()
        assert logging.getLogRecordFactory() is installed
        record = logging.getLogger("t").makeRecord(
            "t", logging.INFO, "f", 1, "%s", ("\udfff",), None
        )
        assert record.tagged
        assert record.getMessage() == "\ufffd"
