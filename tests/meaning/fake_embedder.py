"""A deterministic embedder for tests that need search by meaning but not the real model.

A text's vector counts its *concepts*: each word is looked up in a small table of synonyms
(``puppy`` and ``dog`` are one concept, ``fixing`` and ``repair`` another), other words stand
for themselves, and little words count for nothing. So a paraphrase made of the table's
synonyms shares no word with its source and still lies next to it, as with a real model, and
every answer is known in advance. Calls are recorded (the texts, and where each query ran).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence

import numpy as np

from backend.meaning.embedder import Vectors, unit_rows

DIM = 256
CONCEPTS = {
    "pet": ("dog", "dogs", "puppy", "hound"),
    "damage": ("broken", "damaged", "hurt", "injured"),
    "fix": ("repair", "fixing", "mend", "heal"),
    "bread": ("sourdough", "loaf", "baking", "bake"),
    "grain": ("rye", "flour", "wheat"),
    "boat": ("kayak", "canoe", "paddle"),
    "money": ("cost", "price", "euros", "savings", "budget"),
    "house": ("roof", "house", "home", "gutters"),
    "colour": ("blue", "painting", "paint", "colour"),
}
LITTLE_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "my",
        "is",
        "it",
        "i",
        "how",
        "can",
        "to",
        "of",
        "and",
        "with",
        "for",
        "in",
        "on",
        "our",
        "we",
        "what",
    ]
)
_CONCEPT_OF = {word: concept for concept, words in CONCEPTS.items() for word in words}


def concepts(text: str) -> list[str]:
    words = re.findall(r"\w+", text.lower())
    return [_CONCEPT_OF.get(word, word) for word in words if word not in LITTLE_WORDS]


def _vector(text: str) -> np.ndarray:
    row = np.zeros(DIM, dtype=np.float32)
    for concept in concepts(text):
        digest = hashlib.sha256(concept.encode()).digest()
        row[int.from_bytes(digest[:4], "big") % DIM] += 1.0
    return row


class FakeEmbedder:
    """Concept counts as unit vectors (see the module docstring); records its calls."""

    name = "fake-concepts"
    relevance_floor = 0.5

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.documents: list[str] = []
        self.query_threads: list[threading.Thread] = []  # where each query was embedded

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.documents += texts
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return unit_rows(np.stack([_vector(text) for text in texts]))

    def embed_query(self, text: str) -> Vectors:
        self.queries.append(text)
        self.query_threads.append(threading.current_thread())
        return unit_rows(_vector(text))[0]
