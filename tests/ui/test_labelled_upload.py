"""The drop zones' file inputs carry a name for screen readers (axe's ``label`` rule)."""

from __future__ import annotations

from typing import Any

import reflex as rx

from chatsapp.components.labelled_upload import labelled_upload


def _rendered_inputs(node: dict[str, Any]) -> list[dict[str, Any]]:
    found = [node] if node.get("name") == '"input"' else []
    for child in node.get("children", []):
        found += _rendered_inputs(child)
    return found


class TestLabelledUpload:
    def test_the_file_input_is_named_and_still_takes_the_dropzone_props_after(self):
        upload = labelled_upload("Attach files", rx.button("Attach"), id="test-upload")
        (file_input,) = _rendered_inputs(upload.render())
        props = file_input["props"]
        assert '"aria-label":"Attach files"' in props
        # react-dropzone's input props are spread last: the name adds to them, overrides none.
        assert props[-1].startswith("...")

    def test_the_drop_zone_keeps_its_children_and_id(self):
        upload = labelled_upload("Import", rx.button("Choose a file"), id="test-import")
        rendered = str(upload.render())
        assert "Choose a file" in rendered
        assert "test-import" in rendered
