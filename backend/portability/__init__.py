"""Your data in and out: export, import, fork's neighbours, backup and restore (issue 13).

Modules, one concern each:

* ``document``         the shape every import format yields; export format constants
* ``export_json``      lossless JSON: one chat document, or a ``.zip`` of many
* ``project_document`` a person's projects in a ``.zip`` export (``projects.json``)
* ``export_markdown``  the visible branch of a chat as Markdown (images beside it)
* ``import_source``    an import source on disk (JSON file or ``.zip``), read as streams
* ``limits``           what one import may cost (nesting, unpacked bytes), checked as read
* ``detect``           which format a file holds, from its content
* ``formats/``         one module per import format (native, chatgpt, claude, openwebui)
* ``importer``         writing conversations into a directory: atomic, de-duplicated
* ``import_process``   the same, the reading in a child process under memory and CPU bounds
* ``report``           what an import did
* ``backup``           consistent online snapshots of a data folder, and restoring one

The format is documented in ``docs/export-format.md``.
"""

from backend.portability.backup import BackupReport, backup_data_dir, restore_data_dir
from backend.portability.detect import detect
from backend.portability.document import (
    CHAT_FORMAT,
    EXPORT_VERSION,
    ZIP_EXPORT_FORMAT,
    ImportedConversation,
    ImportedMessage,
    Refused,
)
from backend.portability.export_json import all_chat_ids, write_chat, write_zip_export
from backend.portability.export_markdown import write_markdown, write_markdown_zip
from backend.portability.import_process import ProcessBounds, import_file_bounded
from backend.portability.importer import import_file
from backend.portability.report import Failure, ImportReport

__all__ = [
    "CHAT_FORMAT",
    "EXPORT_VERSION",
    "ZIP_EXPORT_FORMAT",
    "BackupReport",
    "Failure",
    "ImportReport",
    "ImportedConversation",
    "ImportedMessage",
    "ProcessBounds",
    "Refused",
    "all_chat_ids",
    "backup_data_dir",
    "detect",
    "import_file",
    "import_file_bounded",
    "restore_data_dir",
    "write_chat",
    "write_markdown",
    "write_markdown_zip",
    "write_zip_export",
]
