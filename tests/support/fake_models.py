"""The ``GET /models`` route of :class:`tests.support.fake_openai.FakeOpenAI`.

The fake serves ``owner.models`` as an OpenAI model list (``{"object": "list", "data":
[{"id": ...}]}``), or ``owner.models_status`` when that is not 200; each listing request is
recorded in ``owner.requests`` like a completion request (path, headers, empty body).
"""

from __future__ import annotations

import json
from typing import Any


def models_document(models: list[str]) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [{"id": m, "object": "model", "owned_by": "fake"} for m in models],
    }


def answer_models(handler: Any) -> None:
    """Answer one ``GET`` on ``handler`` (a ``BaseHTTPRequestHandler`` of the fake)."""
    owner = handler.server_owner
    if not handler.path.rstrip("/").endswith("/models"):
        handler._send_plain(404, json.dumps({"error": {"message": f"no route {handler.path}"}}))
        return
    if owner.models_status != 200:
        handler._send_plain(owner.models_status, json.dumps({"error": {"message": "refused"}}))
        return
    handler._send_plain(200, json.dumps(models_document(list(owner.models))))
