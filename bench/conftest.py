"""Soak runs are pytest files here, outside the test command (``testpaths`` is ``tests``).

Run one with ``.venv/bin/python -m pytest bench/test_runtime_soak.py -s`` (prints its figures).
"""

from tests.support.fixtures import anyio_backend

__all__ = ["anyio_backend"]
