"""A record of an event a client sent keeps no credentials and no megabytes in the log."""

from __future__ import annotations

import logging

import pytest

from chatsapp.hosting import log_redaction
from chatsapp.hosting.log_redaction import MAX_LOGGED_CHARS, redacted
from chatsapp.reflex_seam import EVENT_LOGGER as REFLEX_EVENT_LOGGER

TOKEN = "Jwiu1sA2w5GB8xdyn--fLbQgNQiD8tlb_WXpBgHGxJo"
EVENT = (
    "Error processing event queue entry for Event(name='x.y', router_data={'headers': "
    f"{{'cookie': 'chats_session={TOKEN}', 'authorization': 'Bearer {TOKEN}', "
    "'host': '127.0.0.1'}}, payload={'leaf': 'yyy'})"
)


class TestEventRecordsAreRedacted:
    def test_the_session_cookie_and_authorization_values_are_replaced(self):
        text = redacted(EVENT)
        assert TOKEN not in text
        assert "'cookie': '[redacted]'" in text and "'host': '127.0.0.1'" in text
        assert redacted(f"cookie header chats_session={TOKEN}; x=1") == (
            "cookie header chats_session=[redacted]; x=1"
        )

    def test_a_huge_payload_is_cut_and_says_how_much_was_left_out(self):
        text = redacted("payload=" + "y" * 500_000)
        assert len(text) < MAX_LOGGED_CHARS + 100
        assert "more characters]" in text

    def test_the_filter_rewrites_records_of_reflexs_event_processor(
        self, caplog: pytest.LogCaptureFixture
    ):
        log_redaction.install()
        log_redaction.install()  # idempotent
        logger = logging.getLogger(REFLEX_EVENT_LOGGER)
        assert len(logger.filters) == 1
        with caplog.at_level(logging.ERROR, logger=REFLEX_EVENT_LOGGER):
            logger.error("%s [txid=1]:", EVENT)
        assert caplog.records and TOKEN not in caplog.text
