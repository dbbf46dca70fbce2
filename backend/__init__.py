"""Chats backend: a pure-Python library (storage engine, directory, conversation runtime).

Every business rule lives here and nothing here imports Reflex (``tests/test_layering.py``
pins it), so any front end drives the same code: the Reflex UI in ``chatsapp/`` is one, a
script or a command line another. Import the subpackages directly: ``backend.sessions``
(one conversation file), ``backend.chats`` (a user's directory of chats), ``backend.runtime``
(model turns), ``backend.transcript`` (render-ready windows), ``backend.errors``.
"""
