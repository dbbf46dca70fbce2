"""Chats backend: a pure-Python library (storage engine, directory, conversation runtime).

Every business rule lives here and nothing here imports Reflex (``tests/test_layering.py``
pins it), so any front end drives the same code: the Reflex UI in ``chatsapp/`` is one, a
script or a command line another. Import the subpackages directly: ``backend.sessions``
(one conversation file), ``backend.chats`` (a user's directory of chats), ``backend.runtime``
(model turns), ``backend.transcript`` (render-ready windows), ``backend.errors``.

"RFC edge case N", "seed 004" and "SPEC" in docstrings name the design documents the project
started from; ``docs/design-sources.md`` holds what the code cites from them, and the
"Words" section of ``docs/architecture.md`` gives each word of this package one meaning.
"""
