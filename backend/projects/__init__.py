"""Projects: a person's chats grouped with shared instructions, files and memory (issue 29).

Modules, one concern each:

* ``service``  ``Projects``: create, rename, delete (one undo with its chats); chats in and
               out; instructions, memory
* ``checks``   what a name and instructions may be
* ``transfer`` whole projects out to an export and back from an import
* ``files``    a project's documents: read as attachments, text extracted once, chunked
* ``turns``    what a turn of a project chat reads and writes; searches scoped to a project
* ``store``    the tables in the person's directory database (``pg_store``: PostgreSQL)
* ``migration`` the tables for ``chats migrate``: copied, chunk search rebuilt by the target
* ``chunks``   cutting a document's text into chunks (pure)
* ``events``   change events, delivered after commit
* ``values``   the frozen values handed out
"""

from backend.projects.checks import MAX_NAME_CHARS
from backend.projects.events import ProjectsChanged
from backend.projects.files import read_document, single_chunk
from backend.projects.service import Projects
from backend.projects.turns import FILES_BUDGET_TOKENS, ProjectSearch
from backend.projects.values import (
    ChunkHit,
    DeletedChats,
    DeletedProject,
    Project,
    ProjectFile,
    ProjectTurn,
)

__all__ = [
    "FILES_BUDGET_TOKENS",
    "MAX_NAME_CHARS",
    "ChunkHit",
    "DeletedChats",
    "DeletedProject",
    "Project",
    "ProjectFile",
    "ProjectSearch",
    "ProjectTurn",
    "Projects",
    "ProjectsChanged",
    "read_document",
    "single_chunk",
]
