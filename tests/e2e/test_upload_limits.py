"""Nobody fills the server's temporary disk through ``POST /_upload``.

Reflex parses a buffered upload's whole multipart body — spooling every file over 1 MiB to a
temporary file — before it queues the event that any check could refuse. A made-up token and
no cookie kept 256 MiB on disk and got a 200. Now an upload is authenticated before its body
is read, and the body is capped while it streams (files x the attachment limit + overhead).

Its own app: small limits, and a temporary folder of its own, whose bytes held by the server's
processes (named or unlinked files, through ``/proc/<pid>/fd``) are what the stories measure
while the body is still arriving.
"""

from __future__ import annotations

import os
import select
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from chatsapp.auth.identity import SESSION_COOKIE
from chatsapp.states.conversation import ChatTabState
from tests.e2e.helpers import ATTACH, TINY_PNG, open_and_close_tab
from tests.support.app_server import AppServer, start_app
from tests.support.deadlines import WAIT_S
from tests.support.processes import process_tree

MiB = 1024 * 1024
ATTACHMENT_LIMIT = 100_000
FILES_PER_MESSAGE = 2
DECLARED = 64 * MiB  # what the attacker announces
SENT = 12 * MiB  # what it sends before waiting for an answer
SPOOLED = 4 * MiB  # the server holding this much on disk means it spooled the body
DEADLINE_S = 120.0  # only a hung server reaches it: the verdict never depends on it
BOUNDARY = "chats-upload-limit-boundary"


@dataclass
class LimitedApp:
    server: AppServer
    temp_dir: Path


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LimitedApp]:
    base = tmp_path_factory.mktemp("upload-limits")
    temp_dir = base / "tmp"
    temp_dir.mkdir()
    env = {
        "TMPDIR": str(temp_dir),
        "CHATS_MAX_ATTACHMENT_BYTES": str(ATTACHMENT_LIMIT),
        "CHATS_MAX_ATTACHMENTS_PER_MESSAGE": str(FILES_PER_MESSAGE),
    }
    server = start_app(base / "data", base / "app.log", env=env)
    yield LimitedApp(server, temp_dir)
    server.stop()


def temp_bytes(app: LimitedApp) -> int:
    """Bytes of the files under the app's temporary folder its processes hold open."""
    total = 0
    for pid in process_tree(app.server.process.pid):
        fd_dir = Path(f"/proc/{pid}/fd")
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd_dir / fd).startswith(str(app.temp_dir)):
                    total += os.stat(fd_dir / fd).st_size
            except OSError:
                continue
    return total


@dataclass
class Outcome:
    status: int | None  # None: no answer came while the body was arriving
    most_temp_bytes: int  # the most the server held on its temporary disk meanwhile
    sent: int


def stream_upload(app: LimitedApp, headers: dict[str, str], *, chunked: bool) -> Outcome:
    """Send an upload's headers, then up to :data:`SENT` bytes of body, and wait for an answer
    or for the server to hold :data:`SPOOLED` bytes on disk, whichever comes first."""
    url = urlsplit(app.server.backend_url)
    assert url.hostname is not None and url.port is not None
    head = [
        "POST /_upload HTTP/1.1",
        f"Host: {url.netloc}",
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}",
        *(f"{name}: {value}" for name, value in headers.items()),
        "Transfer-Encoding: chunked" if chunked else f"Content-Length: {DECLARED}",
    ]
    part = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="files"; filename="big.png"\r\n'
        "Content-Type: image/png\r\n\r\n"
    ).encode()
    piece = bytes(256 * 1024)
    pieces = [part, *([piece] * (SENT // len(piece)))]
    if chunked:
        pieces = [f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in pieces]
    pending = b"".join(pieces)
    sock = socket.create_connection((url.hostname, url.port))
    try:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        sock.setblocking(False)
        sent, most, answer = 0, 0, b""
        deadline = os.times().elapsed + DEADLINE_S
        while os.times().elapsed < deadline:
            readable, writable, _ = select.select([sock], [sock] if pending else [], [], 0.2)
            if readable:
                data = sock.recv(65536)
                answer += data
                if b"\r\n" in answer or not data:
                    break
            if writable:
                try:
                    count = sock.send(pending[: 256 * 1024])
                except (BrokenPipeError, ConnectionResetError):
                    pending = b""
                else:
                    sent, pending = sent + count, pending[count:]
            most = max(most, temp_bytes(app))
            if most >= SPOOLED:
                break
        first_line = answer.split(b"\r\n", 1)[0].split()
        status = int(first_line[1]) if len(first_line) > 1 else None
        return Outcome(status, max(most, temp_bytes(app)), sent)
    finally:
        sock.close()


class TestAnUploadBodyIsNeverSpooledBeforeItIsAllowed:
    def test_a_made_up_token_without_a_cookie_is_refused_with_nothing_on_disk(
        self, limited: LimitedApp
    ):
        headers = {"Reflex-Client-Token": str(uuid.uuid4()), "Reflex-Event-Handler": ATTACH}
        outcome = stream_upload(limited, headers, chunked=False)
        assert outcome.most_temp_bytes == 0, outcome
        assert outcome.status == 403, outcome

    def test_the_owners_body_over_the_cap_is_refused_while_it_streams(self, limited: LimitedApp):
        session = limited.server.session_token("ulla")
        headers = {
            "Reflex-Client-Token": open_and_close_tab(limited.server, session),
            "Reflex-Event-Handler": ATTACH,
            "Cookie": f"{SESSION_COOKIE}={session}",
        }
        for chunked in (False, True):  # a declared length over the cap, and none declared
            outcome = stream_upload(limited, headers, chunked=chunked)
            assert outcome.status == 413, (chunked, outcome)
            # The cap (2 files x 100 kB + overhead) is below what would spill to disk.
            assert outcome.most_temp_bytes == 0, (chunked, outcome)

    def test_the_owners_upload_within_the_cap_is_attached(self, limited: LimitedApp):
        session = limited.server.session_token("ulla")
        token = open_and_close_tab(limited.server, session)
        response = httpx.post(
            f"{limited.server.backend_url}/_upload",
            headers={
                "Reflex-Client-Token": token,
                "Reflex-Event-Handler": ATTACH,
                "Cookie": f"{SESSION_COOKIE}={session}",
            },
            files=[("files", ("dot.png", TINY_PNG, "image/png"))] * FILES_PER_MESSAGE,
            timeout=WAIT_S,
        )
        assert response.status_code == 200, response.text[:500]
        assert ChatTabState.get_full_name() in response.text
