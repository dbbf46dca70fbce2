"""The sharing service: who may do what in a chat shared with others, and share links.

:class:`Sharing` over ``<data_dir>/sharing.sqlite`` (or the ``sharing`` scope on
PostgreSQL). What the UI and the runtime do with it:

* **Before every act** on a chat (read, send, retry, branch, edit, rename, delete, fork,
  share, change-state, export, leave) call :meth:`Sharing.authorize` with the user
  ``Accounts.resolve`` gave for the event; it returns the role or raises. Nothing is cached.
* **The owner's share dialog**: :meth:`share`, :meth:`change_role`, :meth:`remove_member`,
  :meth:`members`, :meth:`set_owner_context`; links: :meth:`create_link`,
  :meth:`list_links`, :meth:`revoke_link`. **A member**: :meth:`shared_with_me`,
  :meth:`members`, :meth:`leave`. **The link page**: :meth:`open_link`.
* **Live**: each app process reads :meth:`changes_since` (start at :meth:`change_cursor`)
  when :meth:`subscribe` tells it of a commit (or another worker does), and refreshes the
  tabs the changes name.
* **The chat's life**: the owner's delete and undo call :meth:`chat_deleted` /
  :meth:`chat_restored`; the purge after the undo window calls :meth:`chat_ended`; deleting
  an account calls :meth:`account_ended`.
* **A run** asks :meth:`run_may_use_owner_context` before it reads the owner's memory, other
  chats or cross-chat search, and the conversation record's ``participant_ids`` come from
  :meth:`participant_ids`; :meth:`run_hooks` hands both to an owner's runtime
  (``ChatRuntime(..., participants=hooks.participants, owner_context=hooks.owner_context)``).
* **Search**: :meth:`search_messages` is a person's message search with the chats shared
  with them (hits labelled with their owner), for the sidebar and ``chats search``.
"""

from __future__ import annotations

from backend.accounts import User
from backend.chats import Chats
from backend.chats.chats import DEFAULT_SEARCH_LIMIT
from backend.sharing.links import LinkOperations
from backend.sharing.members import MembershipOperations
from backend.sharing.run_hooks import RunHooks
from backend.sharing.search import DirectoryOf, search_with_shared
from backend.sharing.values import MessageHit


class Sharing(MembershipOperations, LinkOperations):
    """Memberships, roles, the change feed and share links over one sharing database.

    Safe to share between threads, and between processes on one data folder (each opens its
    own ``Sharing``). Every method is synchronous: async callers offload it.
    """

    def run_hooks(self, owner_id: str) -> RunHooks:
        """The callables the runtime of ``owner_id``'s directory takes (participants of a
        chat, and whether a run of it may use the owner's context)."""
        return RunHooks(self, owner_id)

    def search_messages(
        self,
        person: User,
        own: Chats,
        directory_of: DirectoryOf,
        query: str,
        *,
        limit: int = DEFAULT_SEARCH_LIMIT,
    ) -> list[MessageHit]:
        """``person``'s search: their directory ``own``, plus each chat shared with them now,
        read through its owner's directory (``directory_of(owner_id)``); see
        :mod:`backend.sharing.search`."""
        shared = self.shared_with_me(person)
        return search_with_shared(own, shared, directory_of, query, limit=limit)
