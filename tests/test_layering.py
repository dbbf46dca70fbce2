"""Layers run one way: the backend library never imports Reflex."""

import subprocess
import sys

from tests.conftest import ROOT


def test_importing_every_backend_module_does_not_import_reflex():
    script = (
        "import pkgutil, sys, backend\n"
        "for m in pkgutil.walk_packages(backend.__path__, 'backend.'):\n"
        "    __import__(m.name)\n"
        "assert 'reflex' not in sys.modules, sorted(k for k in sys.modules if 'reflex' in k)\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True)


def test_no_backend_source_file_mentions_reflex_imports():
    offenders = [
        path
        for path in (ROOT / "backend").rglob("*.py")
        if "import reflex" in path.read_text() or "from reflex" in path.read_text()
    ]
    assert offenders == []
