"""A drop zone is one control for assistive technology: its button, not its file input."""

from __future__ import annotations

from typing import Any

import reflex as rx

from chatsapp.components.accessible_upload import accessible_upload


def _rendered_inputs(node: dict[str, Any]) -> list[dict[str, Any]]:
    found = [node] if node.get("name") == '"input"' else []
    for child in node.get("children", []):
        found += _rendered_inputs(child)
    return found


class TestAccessibleUpload:
    def test_the_file_input_is_hidden_from_assistive_technology_and_keeps_the_dropzone_props(
        self,
    ):
        upload = accessible_upload(rx.button("Attach"), id="test-upload")
        (file_input,) = _rendered_inputs(upload.render())
        props = file_input["props"]
        assert '"aria-hidden":"true"' in props
        # react-dropzone's input props are spread last: they still apply in full.
        assert props[-1].startswith("...")

    def test_the_zone_is_no_tab_stop_of_its_own(self):
        upload = accessible_upload(rx.button("Attach"), id="test-zone")
        (dropzone,) = [hook for hook in upload._get_all_hooks() if "useDropzone(" in hook]
        assert '["noKeyboard"] : true' in dropzone

    def test_the_drop_zone_keeps_its_children_and_id(self):
        upload = accessible_upload(rx.button("Choose a file"), id="test-import")
        rendered = str(upload.render())
        assert "Choose a file" in rendered
        assert "test-import" in rendered
