"""Reflex states mirroring the RFC's ``useChats()`` hook (``docs/design-sources.md``).

The name says who sees a state (``tests/test_layering.py`` pins it):

* ``Shared…State`` (``rx.SharedState``) is linked to a shared token and every linked tab sees
  one copy: ``SharedDirectoryState`` and ``SharedMemoryState`` per user (``user-<id>``),
  ``SharedConversationState`` and ``SharedChatSettingsState`` (agent, model, archived) per
  open chat (``conv-<chat id>``).
* ``…TabState`` (``rx.State``) belongs to one browser tab: ``ChatTabState``,
  ``SidebarTabState``, ``SearchTabState``, ``MemoryEditorTabState``, ``WorkerTabState``,
  ``HomeTabState``, ``ChatSettingsTabState``, ``SessionStateTabState``, ``AgentsTabState``,
  ``EndpointsAdminTabState``.
"""
