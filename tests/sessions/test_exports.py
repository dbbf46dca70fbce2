"""The public surface of backend.sessions is small and pinned."""

import backend.sessions


def test_the_exported_names_are_exactly_these():
    assert backend.sessions.__all__ == [
        "COMPACTION_PREFIX",
        "MAX_INLINE_ROW_BYTES",
        "MAX_PATH_DEPTH",
        "OMITTED",
        "POINTER_PREFIX",
        "SCHEMA_VERSION",
        "TOOL_PART_PREFIX",
        "AppendEvent",
        "AppendResult",
        "AttachmentLoader",
        "ClearEvent",
        "CompactEvent",
        "CompactResult",
        "CompactionEvent",
        "CompactionFunction",
        "DeleteEvent",
        "ImportEvent",
        "Payload",
        "RecentHistory",
        "RowStat",
        "SearchResult",
        "SearchableDocuments",
        "Session",
        "SessionChangeEvent",
        "SessionChangeListener",
        "Sessions",
        "StoredCompaction",
        "StoredEntry",
        "TreeEntry",
        "UpdateEvent",
        "create_compact_function",
        "estimate_message_tokens",
        "estimate_string_tokens",
        "extract_attachments",
        "find_pointers",
        "gather_payloads",
        "is_compaction_message",
        "is_tool_part",
        "payload_slices",
        "resolve_attachments",
        "split_content",
        "tool_name",
        "tool_part_type",
    ]


def test_the_export_list_is_sorted_and_every_name_resolves():
    names = backend.sessions.__all__
    # isort style, as ruff keeps it: CONSTANTS, then Classes, then functions.
    assert names == sorted(names, key=lambda n: (not n.isupper(), not n[0].isupper(), n))
    for name in names:
        assert hasattr(backend.sessions, name), name


def test_the_constants_carry_the_reference_values():
    assert backend.sessions.MAX_INLINE_ROW_BYTES == 1_572_864
    assert backend.sessions.MAX_PATH_DEPTH == 10_000
    assert backend.sessions.COMPACTION_PREFIX == "compaction_"
    assert backend.sessions.POINTER_PREFIX == "attachment:sha256:"
