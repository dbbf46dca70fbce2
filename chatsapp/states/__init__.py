"""Reflex states mirroring the RFC's ``useChats()`` hook.

``DirectoryState`` / ``MemoryState`` are shared by every tab of a user (linked to
``user-<id>``); ``ConversationState`` is shared by every tab that has one chat open (linked
to ``conv-<chat id>``). ``SidebarState`` and ``ChatState`` are private to each tab.
"""
