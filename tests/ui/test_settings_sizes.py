"""Sizes on the Settings page read as people read them."""

from chatsapp.states.settings import size_label


class TestSizeLabels:
    def test_sizes_use_the_largest_decimal_unit_they_reach(self):
        assert size_label(999) == "999 bytes"
        assert size_label(1000) == "1.0 kB"
        assert size_label(2_500_000) == "2.5 MB"

    def test_the_default_import_limit_reads_as_about_a_gigabyte(self):
        assert size_label(1024**3) == "1.1 GB"
