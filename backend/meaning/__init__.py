"""Search by meaning: text embedders behind one seam, vector maths and rank fusion.

Pure of storage: the vectors live beside the full-text rows of ``backend.chats``, which
owns their table; this package turns texts into vectors and ranks into one order.
"""

from backend.meaning.embedder import (
    BundledEmbedder,
    Embedder,
    EmbedderUnavailable,
    EndpointEmbedder,
    embedder_from_setting,
)
from backend.meaning.fusion import fuse_ranks

__all__ = [
    "BundledEmbedder",
    "Embedder",
    "EmbedderUnavailable",
    "EndpointEmbedder",
    "embedder_from_setting",
    "fuse_ranks",
]
