"""Chats backend: a pure-Python library (storage engine, directory, conversation runtime).

It never imports Reflex, so it can be used on its own or from the ``chats`` CLI.
Import the subpackages directly: ``backend.sessions``, ``backend.chats``, ...
"""
