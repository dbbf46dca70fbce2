"""Consistent snapshots of a data folder while the app serves, and restoring one.

``backup_data_dir(data_dir, out)`` copies every database :mod:`backend.data_folder` lists (the
accounts, the server settings, every directory, every chat file) with **SQLite's online
backup API**, never a file copy: each database is read inside one read transaction, so each
copy is one committed state of its file even while writers carry on (WAL lets them), and a
half-written page or a ``-wal`` not yet checkpointed is never copied. Order: the server
databases (accounts, settings), then each directory database, then that directory's chat
files (only those the copied directory lists: a chat created after its directory was copied
is not in the backup). A chat file copied later than its directory may hold messages newer
than the directory's message index: ``restore`` runs the index repair, which reconciles
exactly that.

The backup is one ``.zip`` (``backup.json`` + the databases under their relative paths).
``restore_data_dir(backup, data_dir)`` writes each database back through the online backup
API into the live file (so an app holding it open sees the restored content, never a torn
file), then repairs every restored directory's index. It writes only paths the same list
names as backed up: a hand-made zip cannot plant any other file in the data folder.
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from backend.chats import Chats
from backend.chats.chat_records import ChatRecordStore
from backend.chats.ids import validate_directory_id
from backend.chats.layout import DirectoryLayout
from backend.clock import now_ms
from backend.data_folder import (
    CHATS_FOLDER,
    DIRECTORY_FILE,
    SERVER_DATABASES,
    directory_ids,
    is_backed_up,
)
from backend.errors import InvalidIdError, InvalidInputError
from backend.storage import Database

BACKUP_FORMAT = "chats.backup"
BACKUP_VERSION = 1
MANIFEST = "backup.json"

Progress = Callable[[int, int], None]


@dataclass(slots=True)
class BackupReport:
    databases: list[str] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)


def _databases(data_dir: Path) -> list[Path]:
    """Relative paths in backup order: the server databases, then each directory (its chats
    are queued after it, from the copy: see :func:`_chat_files`)."""
    found = [Path(name) for name in SERVER_DATABASES if (data_dir / name).is_file()]
    return found + [Path(directory_id) / DIRECTORY_FILE for directory_id in directory_ids(data_dir)]


def _chat_files(data_dir: Path, directory_copy: Path, folder: Path) -> list[Path]:
    """The chat files the copied directory database knows (by id and generation)."""
    layout = DirectoryLayout(data_dir, folder.name)
    listed = Database(directory_copy)
    try:
        wanted = {
            layout.chat_path(chat_id, generation).name
            for _, chat_id, generation in ChatRecordStore(listed).unpurged_chats()
        }
    finally:
        listed.close()
    chats = data_dir / folder / CHATS_FOLDER
    if not chats.is_dir():
        return []
    return [
        folder / CHATS_FOLDER / p.name for p in sorted(chats.glob("*.sqlite")) if p.name in wanted
    ]


def backup_data_dir(data_dir: Path, out: Path, *, progress: Progress | None = None) -> BackupReport:
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise InvalidInputError(f"{data_dir}: no such data folder")
    report = BackupReport()
    with (
        tempfile.TemporaryDirectory(prefix="chats-backup-") as scratch,
        zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zip_file,
    ):
        work = Path(scratch)
        queue = _databases(data_dir)
        done = 0
        while queue:
            relative = queue.pop(0)
            copy = work / "copy.sqlite"
            try:
                _online_copy(data_dir / relative, copy)
            except Exception as exc:
                report.failures.append((str(relative), str(exc)))
                continue
            if relative.name == DIRECTORY_FILE:
                queue[0:0] = _chat_files(data_dir, copy, relative.parent)
            zip_file.write(copy, relative.as_posix())
            copy.unlink()
            report.databases.append(relative.as_posix())
            done += 1
            if progress is not None:
                progress(done, done + len(queue))
        manifest = {
            "format": BACKUP_FORMAT,
            "version": BACKUP_VERSION,
            "created_at": now_ms(),
            "databases": report.databases,
        }
        zip_file.writestr(MANIFEST, json.dumps(manifest, indent=1))
    return report


def backup_engine(backup: Path) -> str:
    """``"sqlite"`` (a data folder's databases) or ``"postgresql"`` (every table of a schema,
    :mod:`backend.storage.pg_backup`): the engine the backup zip was taken from."""
    try:
        with zipfile.ZipFile(backup) as zip_file:
            manifest = json.loads(zip_file.read(MANIFEST))
    except (OSError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise InvalidInputError(f"{backup}: not a chats backup ({exc})") from exc
    engine = manifest.get("engine", "sqlite") if isinstance(manifest, dict) else None
    if manifest.get("format") != BACKUP_FORMAT or engine not in ("sqlite", "postgresql"):
        raise InvalidInputError(f"{backup}: not a chats backup")
    return str(engine)


def _online_copy(source: Path, target: Path) -> None:
    database = Database(source)
    try:
        database.backup_to(target)
    finally:
        database.close()


def restore_data_dir(
    backup: Path, data_dir: Path, *, progress: Progress | None = None
) -> BackupReport:
    report = BackupReport()
    try:
        zip_file = zipfile.ZipFile(backup)
    except (OSError, zipfile.BadZipFile) as exc:
        raise InvalidInputError(f"{backup}: not a backup ({exc})") from exc
    with zip_file, tempfile.TemporaryDirectory(prefix="chats-restore-") as scratch:
        try:
            manifest = json.loads(zip_file.read(MANIFEST))
        except (KeyError, ValueError) as exc:
            raise InvalidInputError(f"{backup}: no {MANIFEST}; not a chats backup") from exc
        if manifest.get("format") != BACKUP_FORMAT:
            raise InvalidInputError(f"{backup}: not a chats backup")
        names = [n for n in manifest.get("databases", []) if isinstance(n, str)]
        directories: list[str] = []
        for index, name in enumerate(names):
            relative = Path(name)
            refusal = _refusal(name)
            if refusal is not None:
                report.failures.append((name, refusal))
                continue
            extracted = Path(zip_file.extract(name, scratch))
            target = Path(data_dir) / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                _online_copy(extracted, target)
            except Exception as exc:
                report.failures.append((name, str(exc)))
                continue
            finally:
                extracted.unlink()
            report.databases.append(name)
            if relative.name == DIRECTORY_FILE and len(relative.parts) == 2:
                directories.append(relative.parts[0])
            if progress is not None:
                progress(index + 1, len(names))
        for directory_id in directories:
            with Chats(data_dir, directory_id) as chats:
                chats.repair_index(full=True)
    return report


def _refusal(name: str) -> str | None:
    """Why a backup's member may not be written into a data folder (None: it may)."""
    relative = Path(name)
    if relative.is_absolute() or ".." in relative.parts or not is_backed_up(relative.as_posix()):
        return "not a database of a data folder"
    if len(relative.parts) > 1:
        try:
            validate_directory_id(relative.parts[0])
        except InvalidIdError:
            return "not a directory id"
    return None
