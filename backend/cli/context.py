"""What every ``chats`` subcommand shares: the settings, the data folder, exit statuses, and
how a refusal becomes a sentence on stderr.

Exit statuses (the spec's): ``0`` success; ``1`` a partial result, some items refused, each
named on stderr (a command with one item that is refused counts too: nothing was done);
``2`` bad usage, which is what Click answers for unknown options and missing arguments, and
what this CLI answers for input that can never be valid (a malformed username, a password
the policy refuses, a bad setting in the environment).

``--user U`` (the chat commands) names a username or user id; when the folder has no
accounts database (``CHATS_AUTH=none`` installs; on PostgreSQL: ``CHATS_AUTH=none`` and no
such account), ``U`` is the directory id itself.

With ``CHATS_STORAGE`` naming PostgreSQL, the stores open under the fixed logical root
(:attr:`backend.config.Settings.storage_root`), so the command sees what every app node sees
whatever ``--data-dir`` says; a server that cannot be reached stops the command at once
(exit 1) with a sentence naming host and database, never the password.

Subcommands open the stores they need through :class:`CliContext`, which closes them when the
command ends. Each subcommand lives in its own module and registers itself in
:mod:`backend.cli.main`.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import NoReturn

import click

from backend.accounts import ACCOUNTS_FILE, Accounts
from backend.chats import ChatPurged, Chats, DirectoryEvent
from backend.config import PostgresLocation, Settings
from backend.data_folder import DIRECTORY_FILE, SHARING_FILE, directory_ids
from backend.errors import ChatsError, InvalidInputError, StorageError
from backend.sharing import ChatRef, Sharing
from backend.storage.durability import apply_storage_settings
from backend.storage.engines import PostgresStorage, check_storage

EXIT_OK = 0
EXIT_PARTIAL = 1
EXIT_USAGE = 2


class CliContext:
    """The resolved settings of one ``chats`` invocation, and the stores it opened."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        apply_storage_settings(settings)  # as durable as the app's writes
        self._accounts: Accounts | None = None
        self._sharing: Sharing | None = None
        self._directories: dict[str, Chats] = {}

    @classmethod
    def from_options(cls, data_dir: Path | None) -> CliContext:
        try:
            settings = Settings.from_env()
        except ValueError as exc:  # a malformed CHATS_* variable
            raise click.UsageError(str(exc)) from exc
        if data_dir is not None:
            settings = dataclasses.replace(settings, data_dir=data_dir)
        try:
            check_storage(settings)
        except StorageError as exc:  # unreachable or unsupported: named, never the password
            raise click.ClickException(str(exc)) from exc
        return cls(settings)

    def accounts(self) -> Accounts:
        if self._accounts is None:
            self._accounts = Accounts(self.settings)
        return self._accounts

    def directory_id(self, user: str) -> str:
        """``--user U``: a username or a user id; with no accounts database, a directory id.

        A user's directory id is their user id. An unknown user is bad usage (exit 2).
        """
        on_postgresql = self.settings.on_postgresql
        if on_postgresql or (self.settings.data_dir / ACCOUNTS_FILE).is_file():
            accounts = self.accounts()
            try:
                found = accounts.user_by_username(user)
            except InvalidInputError:  # not shaped like a username: maybe an id
                found = None
            found = found or accounts.user(user)
            if found is not None:
                return found.id
            if not (on_postgresql and self.settings.auth_mode == "none"):
                raise click.UsageError(f"--user {user}: no such user")
        return user

    def directory_ids(self) -> list[str]:
        """Every person's directory this installation keeps, sorted: the folders holding a
        directory database, or on PostgreSQL the directory scopes under the storage root."""
        storage = self.settings.storage
        if not isinstance(storage, PostgresLocation):
            return directory_ids(self.settings.data_dir)
        engine = PostgresStorage(storage)
        try:
            names = engine.scope_names(f"{self.settings.storage_root}/")
        finally:
            engine.close()
        suffix = f"/{DIRECTORY_FILE}"
        ids = (name.removesuffix(suffix).rpartition("/")[2] for name in names)
        return sorted(
            directory_id
            for directory_id, name in zip(ids, names, strict=True)
            if name == f"{self.settings.storage_root}/{directory_id}{suffix}"
        )

    def directory(self, user: str) -> Chats:
        """The directory of ``--user U``, opened once per invocation (closed at the end)."""
        return self.directory_by_id(self.directory_id(user), f"--user {user}")

    def directory_by_id(self, directory_id: str, what: str = "directory") -> Chats:
        chats = self._directories.get(directory_id)
        if chats is None:
            ended = functools.partial(self._end_shares_of_purged, directory_id)
            try:
                chats = Chats.from_settings(self.settings, directory_id, listeners=[ended])
            except InvalidInputError as exc:
                raise click.UsageError(f"{what}: {exc}") from exc
            self._directories[directory_id] = chats
        return chats

    def _end_shares_of_purged(self, owner_id: str, event: DirectoryEvent) -> None:
        """A chat purged by this invocation (any directory open sweeps) ends its memberships
        and links, as in the app: nobody keeps a share of a chat that is gone."""
        if not isinstance(event, ChatPurged):
            return
        on_disk = not self.settings.on_postgresql
        if on_disk and not (self.settings.data_dir / SHARING_FILE).is_file():
            return  # nothing was ever shared here
        if self._sharing is None:
            self._sharing = Sharing(self.settings, self.accounts())
        self._sharing.chat_ended(ChatRef(owner_id=owner_id, chat_id=event.chat_id))

    def close(self) -> None:
        for chats in self._directories.values():
            chats.close()
        self._directories.clear()
        if self._sharing is not None:
            self._sharing.close()
            self._sharing = None
        if self._accounts is not None:
            self._accounts.close()
            self._accounts = None


pass_cli = click.make_pass_decorator(CliContext)


def exit_status_for(error: ChatsError) -> int:
    return EXIT_USAGE if isinstance(error, InvalidInputError) else EXIT_PARTIAL


def fail(status: int) -> NoReturn:
    raise click.exceptions.Exit(status)


def refuse(item: str, error: ChatsError) -> int:
    """Name a refused item and why on stderr; return the exit status it calls for."""
    click.echo(f"chats: {item}: {error}", err=True)
    return exit_status_for(error)
