"""The line under each assistant reply that says what it cost in tokens (issue 12)."""

from backend.models import ReplyUsage
from chatsapp.states.rows import usage_label


class TestReplyUsageLabel:
    def test_the_servers_numbers_read_plainly(self):
        assert usage_label(ReplyUsage(1412, 96)) == "1,412 tokens in · 96 out"

    def test_an_estimate_says_it_is_one(self):
        label = usage_label(ReplyUsage(300, 40, estimated=True))
        assert label == "~300 tokens in · ~40 out (estimate)"

    def test_an_estimate_without_the_prompt_names_only_the_output(self):
        assert usage_label(ReplyUsage(0, 40, estimated=True)) == "~40 tokens out (estimate)"

    def test_a_reply_without_usage_shows_no_line(self):
        assert usage_label(None) == ""
