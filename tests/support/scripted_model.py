"""A scripted in-process model for runtime tests (in the spirit of simonw/llm's MockModel).

Each ``stream`` call takes the next scripted response. A response is a string (streamed word
by word) or a list of steps:

* ``"text"`` → a :class:`TextDelta`; a :class:`ToolCall` or :class:`Finish` → emitted as is;
* a ``float`` → sleep that many seconds; an ``Exception`` → raised at that point;
* a :class:`Hold` → wait until the test releases it (to keep a run "running" on purpose).

A ``Finish`` is appended when the script has none. Every request is recorded, and the model
tracks how many streams run at once per ``request.metadata["chat_id"]`` (``max_active``), so a
test can prove that one conversation never runs two turns concurrently.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

from backend.models import Finish, ModelEvent, ModelProvider, ModelRequest, TextDelta, ToolCall
from tests.support.deadlines import WAIT_S, until

Step = Any
Response = str | Sequence[Step]


class Hold:
    """A point where a scripted stream waits until ``release()``; usable across event loops."""

    def __init__(self) -> None:
        self._reached = threading.Event()
        self._released = threading.Event()

    def release(self) -> None:
        self._released.set()

    @property
    def is_reached(self) -> bool:
        return self._reached.is_set()

    async def reached(self, timeout_s: float = WAIT_S) -> None:
        """Wait (without blocking the loop) until a stream arrives at this hold."""
        await until(self._reached.is_set, timeout_s=timeout_s, what="a stream reaching the hold")

    async def _wait(self) -> None:
        self._reached.set()
        await until(self._released.is_set, what="the test releasing the hold")


class ScriptedModel:
    """A :class:`backend.models.ModelProvider` that plays back scripted responses."""

    def __init__(
        self,
        *responses: Response,
        default: Response = "OK.",
        offline: bool = False,
        complete_with: str | Callable[[str], str] = "Scripted summary.",
        retrieval: Callable[[str], str | None] | None = None,
        name: str = "scripted",
    ) -> None:
        self.name = name
        self.label = "Scripted test model"
        self.offline = offline
        self.default = default
        self.requests: list[ModelRequest] = []
        self.prompts: list[str] = []
        self.max_active: dict[str, int] = {}
        self._active: dict[str, int] = {}
        self._responses: deque[Response] = deque(responses)
        self._complete_with = complete_with
        self._retrieval = retrieval

    def script(self, *responses: Response) -> ScriptedModel:
        self._responses.extend(responses)
        return self

    def retrieval_query(self, user_text: str) -> str | None:
        return self._retrieval(user_text) if self._retrieval else None

    async def complete(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if callable(self._complete_with):
            return self._complete_with(prompt)
        return self._complete_with

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ModelEvent, None]:
        self.requests.append(request)
        response = self._responses.popleft() if self._responses else self.default
        key = str(request.metadata.get("chat_id", ""))
        self._active[key] = self._active.get(key, 0) + 1
        self.max_active[key] = max(self.max_active.get(key, 0), self._active[key])
        try:
            finished = False
            for step in _steps(response):
                if isinstance(step, Hold):
                    await step._wait()
                elif isinstance(step, BaseException):
                    raise step
                elif isinstance(step, (int, float)):
                    await asyncio.sleep(step)
                elif isinstance(step, str):
                    await asyncio.sleep(0)
                    yield TextDelta(step)
                else:
                    finished = finished or isinstance(step, Finish)
                    yield step
            if not finished:
                calls = any(isinstance(s, ToolCall) for s in _steps(response))
                yield Finish("tool_calls" if calls else "stop")
        finally:
            self._active[key] -= 1


def _steps(response: Response) -> list[Step]:
    if isinstance(response, str):
        words = response.split(" ")
        return [w if i == len(words) - 1 else w + " " for i, w in enumerate(words)]
    return list(response)


def _implements_the_provider(model: ScriptedModel) -> ModelProvider:
    """Never called: mypy checks that the scripted model satisfies ``ModelProvider``."""
    return model
