"""What a project's name and instructions may be: checked alike when typed and when imported."""

from __future__ import annotations

from backend.errors import InvalidInputError
from backend.storage import well_formed_text

MAX_NAME_CHARS = 100
MAX_INSTRUCTIONS_CHARS = 20_000


def check_name(name: object) -> str:
    if not isinstance(name, str):
        raise InvalidInputError("a project's name must be text")
    name = well_formed_text(name).strip()
    if not name:
        raise InvalidInputError("a project's name must not be blank")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidInputError(f"a project's name is longer than {MAX_NAME_CHARS} characters")
    return name


def check_instructions(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidInputError("a project's instructions must be text")
    text = well_formed_text(text).strip()
    if len(text) > MAX_INSTRUCTIONS_CHARS:
        raise InvalidInputError(
            f"a project's instructions are longer than {MAX_INSTRUCTIONS_CHARS:,} characters"
        )
    return text
