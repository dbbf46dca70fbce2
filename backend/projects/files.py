"""A project's files: documents whose text is extracted once, chunked, and searched per turn.

A file is read as an attachment is (:func:`read_document`: the same size limit and the same
document types, checked on the bytes; images are refused, a project draws on text). Its text
is extracted once when it is added (:func:`backend.attachment_text.document_text`), cut into
chunks (:mod:`backend.projects.chunks`) and stored with the file in one transaction: a file
is there with all its chunks, or not at all. The bytes themselves are not kept.

Search is full-text over the chunks of one project (any word may match, best first). The
seam for meaning-based search is the chunk's ``doc`` key (see :mod:`backend.projects.store`).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable

from backend.attachment_text import document_text
from backend.chats.text import any_terms_query
from backend.errors import InvalidInputError
from backend.projects.chunks import chunk_text
from backend.projects.store import ProjectStore
from backend.projects.values import ChunkHit, Project, ProjectFile
from backend.storage import Scope, well_formed_text
from backend.uploads import AttachmentLimits, Upload, read_attachment

FILE_ID_PREFIX = "pf_"
MAX_FILE_NAME_CHARS = 255
SEARCH_LIMIT = 20


async def read_document(
    name: str, chunks: AsyncIterator[bytes], limits: AttachmentLimits
) -> Upload:
    """Read a project file as an attachment is read, refusing images and the rest."""
    return check_document(await read_attachment(name, chunks, limits))


def check_document(upload: Upload) -> Upload:
    """``upload`` unless it is an image: a project draws on text."""
    if upload.is_image:
        raise InvalidInputError(
            f"{upload.name} is an image: a project's files are documents (PDF, text, markdown, "
            "code, CSV or JSON)."
        )
    return upload


async def single_chunk(data: bytes) -> AsyncIterator[bytes]:
    """Bytes already in memory as the stream :func:`read_document` reads."""
    yield data


class ProjectFiles:
    """Add, list, remove and search one person's project files (see the module docstring)."""

    def __init__(
        self,
        db: Scope,
        store: ProjectStore,
        get_project: Callable[[str], Project],
        changed: Callable[[str, str], None],
        clock: Callable[[], int],
    ) -> None:
        self._db = db
        self._store = store
        self._get = get_project
        self._changed = changed
        self._clock = clock

    def add(self, project_id: str, name: str, media_type: str, data: bytes) -> ProjectFile:
        """Store a document read by :func:`read_document` (its checked name, type, bytes)."""
        name = check_file_name(name)
        self._get(project_id)
        text = document_text(data, media_type)
        if text is None:
            raise InvalidInputError(f"the text of {name} could not be read")
        chunks = chunk_text(well_formed_text(text))
        file = ProjectFile(
            FILE_ID_PREFIX + uuid.uuid4().hex[:16],
            project_id,
            name,
            media_type,
            len(data),
            sum(len(chunk) for chunk in chunks),
            self._clock(),
        )
        with self._db.transaction():
            self._get(project_id)  # deleted meanwhile: nothing is stored
            self._store.insert_file(file, chunks)
            self._changed(project_id, "file_added")
        return file

    def add_upload(self, project_id: str, upload: Upload) -> ProjectFile:
        """Store an upload read as an attachment is (``read_attachment``); images refused."""
        upload = check_document(upload)
        return self.add(project_id, upload.name, upload.media_type, upload.data)

    def list_files(self, project_id: str) -> list[ProjectFile]:
        self._get(project_id)
        return self._store.files(project_id)

    def text_of(self, file_id: str) -> list[str]:
        """A file's chunks, in order (what export and the tests read)."""
        return self._store.chunks_of(file_id)

    def remove(self, file_id: str) -> None:
        """Remove a file and its chunks; an unknown id is no error (removed in another tab)."""
        with self._db.transaction():
            file = self._store.file(file_id)
            if file is None:
                return
            self._store.delete_file(file_id)
            self._changed(file.project_id, "file_removed")

    def search(self, project_id: str, query: str, limit: int = SEARCH_LIMIT) -> list[ChunkHit]:
        """The chunks of ``project_id``'s files holding words of ``query``, best first."""
        if not isinstance(query, str):
            raise InvalidInputError("a search must be text")
        match = any_terms_query(query)
        if match is None:
            return []
        return self._store.search_chunks(project_id, match, max(1, min(limit, 100)))


def check_file_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError("a project file needs a name")
    name = well_formed_text(name).strip()
    if len(name) > MAX_FILE_NAME_CHARS:
        raise InvalidInputError(f"a file name is longer than {MAX_FILE_NAME_CHARS} characters")
    return name
