"""Layers run one way: the backend library never imports Reflex, and no imports go in circles.

The import graph is read from the source (AST), imports inside functions included: a cycle
hidden behind a function-level import is still a cycle between two modules that each need the
other. A *package* here is ``backend.<name>`` / ``chatsapp.<name>`` (a sub-package, or a
top-level module such as ``backend.errors``), and each module of chatsapp's concern folders
(``chatsapp.auth.guard``, ``chatsapp.live.bridge``, …); ``ALLOWED_IMPORTS`` pins which package may
import which, as it holds today. Adding a dependency means editing that table, in review.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from tests.conftest import ROOT

TOP_PACKAGES = ("backend", "chatsapp")

ALLOWED_IMPORTS: dict[str, set[str]] = {
    # backend: leaf modules first, then storage → sessions → chats → runtime.
    "backend": set(),
    "backend.clock": set(),
    "backend.config": set(),
    "backend.errors": set(),
    "backend.data_folder": set(),  # the files of a data folder, one list
    "backend.log_records": {"backend.storage"},  # log text by the storage text rule
    "backend.messages": set(),  # a message and its parts, typed: shared by every layer
    "backend.providers": set(),
    "backend.uploads": {"backend.config", "backend.errors"},
    "backend.attachment_text": {"backend.uploads"},
    # The engine is picked from the settings (CHATS_STORAGE), durability too.
    "backend.storage": {"backend.clock", "backend.config", "backend.errors"},
    # Sessions(path) reads CHATS_STORAGE through backend.config (backend/sessions/location.py).
    "backend.sessions": {"backend.clock", "backend.config", "backend.errors", "backend.storage"},
    # A reply's usage is read with the models' ReplyUsage (one reader of metadata.usage).
    "backend.transcript": {
        "backend.errors",  # a chosen version that names no message of the chat
        "backend.messages",
        "backend.models",
        "backend.sessions",
        "backend.storage",
        "backend.uploads",
    },
    # The model wire sends text by the storage text rule (well_formed_text).
    "backend.models": {"backend.config", "backend.errors", "backend.storage"},
    "backend.meaning": {"backend.errors"},  # embedders and rank fusion: no storage
    "backend.chats": {
        "backend.clock",
        "backend.config",
        "backend.data_folder",
        "backend.errors",
        "backend.meaning",  # vectors beside the message index, hybrid search
        "backend.sessions",
        "backend.storage",
    },
    "backend.portability": {
        # chats migrate: each package's own copy step (its migration module)
        "backend.accounts",
        "backend.agents",
        "backend.chats",
        "backend.clock",
        "backend.config",  # chats migrate: the PostgreSQL location of one end
        "backend.data_folder",
        "backend.endpoints",
        "backend.errors",
        "backend.projects",  # a person's export carries their projects
        "backend.runtime",  # the conversation record and session state it exports
        "backend.sessions",
        "backend.sharing",
        "backend.storage",
    },
    "backend.runtime": {
        "backend.chats",
        "backend.messages",  # the messages its run events carry
        "backend.clock",
        "backend.config",
        "backend.errors",
        "backend.agents",  # bound agents come from the user's library
        "backend.models",
        "backend.providers",
        "backend.sessions",
        "backend.storage",  # its own run-state tables (backend/runtime/store.py)
        "backend.uploads",  # a message's attachments are checked where it is stored
        "backend.attachment_text",  # documents' text in the prompt
    },
    # Accounts read the former local user's directory (adoption) and keep their own file.
    "backend.accounts": {
        "backend.chats",
        "backend.clock",
        "backend.config",
        "backend.data_folder",
        "backend.errors",
        "backend.storage",
    },
    # Projects: their own tables in the person's directory database; a project's files are
    # read as attachments are (uploads, attachment_text); searches use the directory's.
    "backend.projects": {
        "backend.attachment_text",
        "backend.chats",
        "backend.clock",
        "backend.errors",
        "backend.sessions",
        "backend.storage",
        "backend.uploads",
    },
    # The agent library: its own tables in the directory database it is handed.
    "backend.agents": {"backend.clock", "backend.errors", "backend.models", "backend.storage"},
    # Model endpoints: admins (accounts) may configure them; their own settings.sqlite.
    "backend.endpoints": {
        "backend.accounts",
        "backend.clock",
        "backend.config",
        "backend.data_folder",
        "backend.errors",
        "backend.models",
        "backend.storage",
    },
    # Shared chats: names come from accounts' read API, snapshots meet the upload limits and
    # the chat title limit; its own sharing.sqlite.
    "backend.sharing": {
        "backend.accounts",
        "backend.chats",
        "backend.clock",
        "backend.config",
        "backend.data_folder",
        "backend.errors",
        "backend.storage",
        "backend.uploads",
    },
    # The CLI is a thin layer over the library: any backend package, never chatsapp.
    "backend.cli": {
        "backend.accounts",
        "backend.chats",
        "backend.projects",
        "backend.config",
        "backend.data_folder",
        "backend.errors",
        "backend.log_records",
        "backend.meaning",  # chats search picks the embedder from the settings
        "backend.portability",
        "backend.sharing",  # chats search: a person's hits include the chats shared with them
        "backend.storage",
        "backend.uploads",  # a project file meets the attachment limits
    },
    # chatsapp: app module → pages → components → states → identity → services → backend.
    # The bridge is installed by the app module and imports no state module.
    "chatsapp": set(),
    "chatsapp.services": {
        "backend.accounts",
        "backend.agents",
        "backend.chats",
        "backend.projects",
        "backend.clock",
        "backend.config",
        "backend.endpoints",
        "backend.errors",
        "backend.runtime",
        "backend.sharing",  # one Sharing per process (Services.sharing)
    },
    # A chat page's address, built and read in one place: pure.
    "chatsapp.chat_route": set(),
    # Every use of a Reflex internal: Reflex only, nothing of the app.
    "chatsapp.reflex_seam": set(),
    # The concern folders' own ``__init__`` modules import nothing.
    "chatsapp.auth": set(),
    "chatsapp.hosting": set(),
    "chatsapp.live": set(),
    "chatsapp.routes": set(),
    # Who a tab is: decided from the connection (cookie, proxy header) by backend.accounts.
    "chatsapp.auth.identity": {"backend.accounts", "backend.errors", "chatsapp.services"},
    "chatsapp.auth.signout_watch": {
        "chatsapp.auth.identity",
        "chatsapp.reflex_seam",
        "chatsapp.services",
    },
    # Every event passes the guard first; the auth routes are the only cookie writers.
    # (and makes its text well-formed by the storage text rule).
    "chatsapp.auth.guard": {
        "chatsapp.chat_route",
        "chatsapp.reflex_seam",
        "backend.storage",
        "chatsapp.auth.identity",
        "chatsapp.services",
        "chatsapp.auth.signout_watch",
    },
    # A socket connect is checked against the tab's bound owner, as the guard checks events.
    "chatsapp.auth.token_binding": {
        "chatsapp.reflex_seam",
        "chatsapp.auth.guard",
        "chatsapp.auth.identity",
        "chatsapp.services",
    },
    "chatsapp.routes.account_forms": {
        "backend.accounts",
        "backend.config",  # an origin's one spelling (web_origin)
        "backend.errors",
        "chatsapp.auth.identity",
        "chatsapp.routes.origins",
        "chatsapp.services",
    },
    # The app's own origins (CHATS_ALLOWED_ORIGINS, else the request's Host): plain ASGI.
    "chatsapp.routes.origins": {"backend.config", "chatsapp.routes.csp", "chatsapp.services"},
    # An upload is checked from its own request against the token's bound owner.
    "chatsapp.routes.upload_guard": {
        "backend.config",
        "chatsapp.auth.identity",
        "chatsapp.auth.token_binding",
        "chatsapp.reflex_seam",
        "chatsapp.services",
    },
    # Downloads decide who is asking per request, as the guard does per event.
    "chatsapp.routes.exports": {
        "chatsapp.routes.share_link",  # the process's sharing service: what is shared with me
        "backend.chats",
        "backend.errors",
        "backend.portability",
        "chatsapp.auth.identity",
        "chatsapp.services",
    },
    # A share link's page: the snapshot the sharing store holds, per request.
    "chatsapp.routes.share_link": {"backend.errors", "backend.sharing", "chatsapp.services"},
    # ``GET /`` answered with the latest chat's address, as the page's own redirect does.
    "chatsapp.routes.home_redirect": {
        "chatsapp.chat_route",
        "chatsapp.auth.identity",
        "chatsapp.services",
    },
    "chatsapp.states": {
        "chatsapp.chat_route",
        "chatsapp.reflex_seam",
        "backend.accounts",
        "backend.agents",
        "backend.chats",
        "backend.endpoints",
        "backend.errors",
        "backend.messages",
        "backend.models",
        "backend.portability",
        "backend.runtime",  # its public names only (start_chat, DEFAULT_AGENT_ID), never built
        "backend.sharing",  # who may act on a shared chat (authorize), the share dialog
        "backend.transcript",
        "backend.uploads",
        "chatsapp.routes.home_redirect",  # the latest chat's address (one rule for both redirects)
        "chatsapp.auth.identity",
        "chatsapp.services",
        "chatsapp.live.stream_pieces",
    },
    "chatsapp.live.bridge": {
        "backend.chats",  # the directory it subscribes to (a type)
        "chatsapp.live.chat_headers",
        "chatsapp.auth.identity",
        "chatsapp.live.fanout",
        "chatsapp.live.person_releases",
        "chatsapp.live.run_pump",
        "chatsapp.live.tab_sockets",
        "chatsapp.live.text_frames",
        "chatsapp.reflex_seam",
        "chatsapp.services",
    },
    # Applies a chat's run events to the state class it is given, written through the fan-out
    # (the runtime's public names only: ChatRuntime, RunEvent, RUN_END_EVENTS).
    "chatsapp.live.run_pump": {
        "backend.runtime",
        "chatsapp.auth.identity",  # the chat's shared token
        "chatsapp.live.fanout",
        "chatsapp.live.stream_pieces",  # which flush is a frame, which a merge
        "chatsapp.reflex_seam",
    },
    "chatsapp.live.tab_sockets": {"chatsapp.auth.identity", "chatsapp.reflex_seam"},
    # Shared chats live: the sharing feed, presence, removals (beside the bridge it reads).
    "chatsapp.live.sharing_live": {
        "backend.errors",
        "backend.sharing",
        "chatsapp.auth.identity",
        "chatsapp.live.bridge",
        "chatsapp.live.fanout",
        "chatsapp.live.sharing_wakeups",
        "chatsapp.reflex_seam",
        "chatsapp.services",
    },
    # When to read the sharing feed: local commits, Redis announcements, a fallback read.
    "chatsapp.live.sharing_wakeups": set(),
    # Closing a person's directory when their last tab left, a part of the bridge.
    "chatsapp.live.person_releases": {"backend.chats", "chatsapp.services"},
    # A chat's header refreshes, a part of the bridge.
    "chatsapp.live.chat_headers": {"chatsapp.auth.identity", "chatsapp.services"},
    # Holds and expires temporary chats through the services; the bridge's watched chats come
    # in as a callable (it imports no bridge).
    "chatsapp.live.temporary_keeper": {"chatsapp.services"},
    # Sends one shared-state change to every linked tab: Reflex only, nothing of the app.
    "chatsapp.live.fanout": {"chatsapp.reflex_seam"},
    # A streamed reply's newest text straight to the tabs each process says show the chat.
    "chatsapp.live.text_frames": {"chatsapp.reflex_seam"},
    # Components link to the export routes' addresses (the routes own them).
    "chatsapp.components": {
        "chatsapp.chat_route",
        "chatsapp.reflex_seam",
        "chatsapp.routes.exports",
        "chatsapp.states",
    },
    "chatsapp.pages": {"chatsapp.chat_route", "chatsapp.components", "chatsapp.states"},
    "chatsapp.routes.csp": set(),  # plain ASGI: no Reflex, nothing of the app
    # The session cookie's name; Reflex's event logger; well-formed records for every line.
    "chatsapp.hosting.log_redaction": {
        "backend.log_records",
        "chatsapp.auth.identity",
        "chatsapp.reflex_seam",
    },
    "chatsapp.hosting.collector": set(),  # the process's gc thresholds: nothing of the app
    "chatsapp.hosting.task_dump": set(),  # the event loop's tasks on a signal: nothing of the app
    # How a streaming reply's text is split into pieces: pure, nothing of the app or Reflex.
    "chatsapp.live.stream_pieces": set(),
    # Serves the app (Reflex's run command, uvicorn): reads the worker count, imports no app.
    "chatsapp.hosting.server": {"backend.config", "chatsapp.reflex_seam"},
    "chatsapp.chatsapp": {
        "chatsapp.auth.guard",
        "chatsapp.routes.account_forms",
        "chatsapp.live.bridge",
        "chatsapp.live.sharing_live",
        "chatsapp.live.temporary_keeper",
        "chatsapp.hosting.collector",
        "chatsapp.hosting.task_dump",
        "chatsapp.routes.csp",
        "chatsapp.routes.exports",
        "chatsapp.routes.home_redirect",
        "chatsapp.hosting.log_redaction",
        "chatsapp.routes.origins",
        "chatsapp.routes.share_link",
        "chatsapp.pages",
        "chatsapp.services",
        "chatsapp.auth.signout_watch",
        "chatsapp.states",
        "chatsapp.auth.token_binding",
        "chatsapp.routes.upload_guard",
    },
}


# ── the import graph ────────────────────────────────────────────────


def _module_files(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name → (file, is a package ``__init__``) for every module we own."""
    modules: dict[str, tuple[Path, bool]] = {}
    for top in TOP_PACKAGES:
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            modules[".".join(parts)] = (path, is_package)
    return modules


def _owner(name: str, modules: Mapping[str, object]) -> str | None:
    """The module of ours that ``import name`` loads last (``a.b.C`` → ``a.b``), if any."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported_names(tree: ast.AST, package: str) -> Iterable[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            # `from a import b` loads a.b when b is a submodule, else just a.
            yield from (f"{source}.{alias.name}" for alias in node.names)


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module → the modules of ours it imports (anywhere in the file)."""
    modules = _module_files(root)
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        targets = {
            _owner(n, modules) for n in _imported_names(ast.parse(path.read_text()), package)
        }
        graph[name] = {t for t in targets if t and t != name}
    return graph


# chatsapp's concern folders: each module in them is placed in the rule table on its own.
GROUPED_BY_CONCERN = ("chatsapp.auth", "chatsapp.hosting", "chatsapp.live", "chatsapp.routes")


def package_of(module: str) -> str:
    depth = 3 if ".".join(module.split(".")[:2]) in GROUPED_BY_CONCERN else 2
    return ".".join(module.split(".")[:depth])


def package_graph(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = {package_of(m): set() for m in graph}
    for module, targets in graph.items():
        source = package_of(module)
        packages[source] |= {package_of(t) for t in targets} - {source}
    return packages


def find_cycle(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """One cycle as ``[a, b, …, a]``, or ``[]`` when the graph has none (iterative DFS)."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    for start in sorted(graph):
        if state.get(start):
            continue
        path: list[str] = [start]
        stack = [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            following = next(stack[-1], None)
            if following is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(following) == 1:
                return [*path[path.index(following) :], following]
            elif not state.get(following):
                state[following] = 1
                path.append(following)
                stack.append(iter(sorted(graph.get(following, ()))))
    return []


# ── the rules ───────────────────────────────────────────────────────


class TestBackendNeverImportsReflex:
    def test_importing_every_backend_module_does_not_import_reflex(self):
        script = (
            "import pkgutil, sys, backend\n"
            "for m in pkgutil.walk_packages(backend.__path__, 'backend.'):\n"
            "    __import__(m.name)\n"
            "assert 'reflex' not in sys.modules, sorted(k for k in sys.modules if 'reflex' in k)\n"
        )
        subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True)

    def test_no_backend_source_file_mentions_reflex_imports(self):
        offenders = [
            path
            for path in (ROOT / "backend").rglob("*.py")
            if "import reflex" in path.read_text() or "from reflex" in path.read_text()
        ]
        assert offenders == []

    def test_no_backend_module_imports_the_ui_package(self):
        offenders = {
            module: sorted(t for t in targets if t.startswith("chatsapp"))
            for module, targets in import_graph().items()
            if module.startswith("backend") and any(t.startswith("chatsapp") for t in targets)
        }
        assert offenders == {}


class TestNoImportCycles:
    def test_no_two_modules_import_each_other_even_through_function_level_imports(self):
        cycle = find_cycle(import_graph())
        assert cycle == [], "import cycle between modules: " + " → ".join(cycle)

    def test_no_two_packages_import_each_other(self):
        cycle = find_cycle(package_graph(import_graph()))
        assert cycle == [], "import cycle between packages: " + " → ".join(cycle)

    def test_the_cycle_finder_names_a_cycle_hidden_in_a_function(self, tmp_path: Path):
        (tmp_path / "backend").mkdir()
        (tmp_path / "chatsapp").mkdir()
        (tmp_path / "backend" / "__init__.py").write_text("")
        (tmp_path / "chatsapp" / "__init__.py").write_text("")
        (tmp_path / "chatsapp" / "bridge.py").write_text(
            "def push():\n    from chatsapp.state import State\n"
        )
        (tmp_path / "chatsapp" / "state.py").write_text("from chatsapp import bridge\n")
        cycle = find_cycle(import_graph(tmp_path))
        assert cycle == ["chatsapp.bridge", "chatsapp.state", "chatsapp.bridge"]


class TestPackageRule:
    def test_every_package_is_placed_in_the_rule_table(self):
        unplaced = sorted(set(package_graph(import_graph())) - set(ALLOWED_IMPORTS))
        assert unplaced == [], f"add these packages to ALLOWED_IMPORTS: {unplaced}"

    def test_each_package_imports_only_the_packages_the_rule_allows(self):
        breaches = {
            package: sorted(targets - ALLOWED_IMPORTS.get(package, set()))
            for package, targets in package_graph(import_graph()).items()
            if targets - ALLOWED_IMPORTS.get(package, set())
        }
        assert breaches == {}, f"imports outside the layering rule: {breaches}"

    def test_the_rule_itself_has_no_cycle(self):
        assert find_cycle(ALLOWED_IMPORTS) == []


class TestStateNamesSayWhoSeesThem:
    """``Shared…State`` is one copy for every linked tab; ``…TabState`` belongs to one tab."""

    @staticmethod
    def _state_classes() -> dict[str, str]:
        """Class name → its Reflex base (``State`` / ``SharedState``) across ``chatsapp``."""
        found: dict[str, str] = {}
        for path in (ROOT / "chatsapp").rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.ClassDef):
                    continue
                for base in node.bases:
                    if isinstance(base, ast.Attribute) and base.attr in ("State", "SharedState"):
                        found[node.name] = base.attr
        return found

    def test_every_shared_state_is_named_shared(self):
        misnamed = [
            name
            for name, base in self._state_classes().items()
            if base == "SharedState" and not (name.startswith("Shared") and name.endswith("State"))
        ]
        assert misnamed == []

    def test_every_per_tab_state_is_named_tab_state(self):
        states = self._state_classes()
        assert states, "no Reflex state found: the scan is broken"
        misnamed = [
            n for n, base in states.items() if base == "State" and not n.endswith("TabState")
        ]
        assert misnamed == []


# ── the one Reflex seam ─────────────────────────────────────────────

SEAM = ROOT / "chatsapp" / "reflex_seam.py"
# What chatsapp may import from Reflex outside the seam besides ``import reflex as rx``: the
# types components are built from (Reflex documents building custom components with them).
COMPONENT_BUILDING_IMPORTS = {
    ("reflex.event", "EventHandler"),
    ("reflex.event", "EventType"),
    ("reflex_base.constants", "Dirs"),
    ("reflex_base.utils.imports", "ImportVar"),
    ("reflex_base.vars", "VarData"),
    ("reflex_components_core.el.elements.base", "BaseHTML"),
    ("reflex_components_core.el.elements.forms", "Input"),
}
# Public-looking names of Reflex's app and socket layer that are not its API.
INTERNAL_ATTRIBUTES = frozenset(
    (
        "dirty_vars",
        "event_namespace",
        "on_connect",
        "on_disconnect",
        "set_contexts",
        "sid_to_token",
        "state_manager",
        "substates",
        "token_to_socket",
    )
)


def _chatsapp_sources() -> dict[Path, ast.AST]:
    return {path: ast.parse(path.read_text()) for path in sorted((ROOT / "chatsapp").rglob("*.py"))}


def _own_private_names(trees: Iterable[ast.AST]) -> set[str]:
    """Every ``_name`` chatsapp defines itself (functions, classes, attributes, variables)."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
    return {n for n in names if n.startswith("_")}


def reflex_internals_used(sources: Mapping[Path, ast.AST]) -> dict[str, list[str]]:
    """File → the Reflex internals it touches (imports, private names, internal attributes)."""
    own = _own_private_names(sources.values())
    found: dict[str, list[str]] = {}
    for path, tree in sources.items():
        uses: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("reflex"):
                uses += [
                    f"from {node.module} import {alias.name}"
                    for alias in node.names
                    if (node.module, alias.name) not in COMPONENT_BUILDING_IMPORTS
                ]
            elif isinstance(node, ast.Import):
                uses += [f"import {a.name}" for a in node.names if a.name.startswith("reflex.")]
            elif isinstance(node, ast.Attribute):
                private = node.attr.startswith("_") and not node.attr.startswith("__")
                if (private and node.attr not in own) or node.attr in INTERNAL_ATTRIBUTES:
                    uses.append(f".{node.attr} (line {node.lineno})")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "setattr", "hasattr")
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and str(node.args[1].value).startswith("_")
                and node.args[1].value not in own
            ):
                uses.append(f"{node.func.id}(…, {node.args[1].value!r}) (line {node.lineno})")
        if uses:
            found[str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)] = uses
    return found


class TestOnlyTheSeamTouchesReflexInternals:
    def test_no_module_but_the_seam_reaches_into_reflex(self):
        sources = {p: t for p, t in _chatsapp_sources().items() if p != SEAM}
        assert reflex_internals_used(sources) == {}, (
            "use (or add) a function of chatsapp/reflex_seam.py, with its contract test"
        )

    def test_the_scan_finds_each_kind_of_internal_use(self, tmp_path: Path):
        source = (
            "from reflex.istate.shared import SharedState\n"
            "import reflex.utils.exec\n"
            "def f(state, app):\n"
            "    state._link_to('x')\n"
            "    app.event_namespace.on_connect = None\n"
            "    getattr(state, '_previous_dirty_vars')\n"
        )
        uses = reflex_internals_used({tmp_path / "x.py": ast.parse(source)})
        assert [len(u) for u in uses.values()] == [6]

    def test_names_the_app_defines_itself_are_not_internals(self, tmp_path: Path):
        source = "class A:\n    _owner: str = ''\ndef f(a):\n    return a._owner\n"
        assert reflex_internals_used({tmp_path / "x.py": ast.parse(source)}) == {}

    def test_the_seam_is_where_the_internals_are(self):
        assert reflex_internals_used({SEAM: ast.parse(SEAM.read_text())})


# ── tests: no test module imports another ───────────────────────────


def importers_of_test_modules(root: Path = ROOT) -> dict[str, set[str]]:
    """``{test module: test modules importing it}``: what one test shares with another lives
    in a helper module (``tests/support/``, a package's ``conftest.py`` or helpers), so running
    or deleting one test file never changes another's."""
    importers: dict[str, set[str]] = {}
    for path in sorted((root / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                if name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_"):
                    importers.setdefault(name, set()).add(path.relative_to(root).as_posix())
    return importers


def test_no_test_module_imports_another():
    assert importers_of_test_modules() == {}


def test_a_test_module_imported_by_another_is_found(tmp_path: Path):
    (tmp_path / "tests" / "chats").mkdir(parents=True)
    (tmp_path / "tests" / "chats" / "test_a.py").write_text("from tests.chats.test_b import X\n")
    (tmp_path / "tests" / "chats" / "helpers.py").write_text("import tests.chats.test_b\n")
    (tmp_path / "tests" / "chats" / "test_c.py").write_text("from tests.chats.helpers import Y\n")
    assert importers_of_test_modules(tmp_path) == {
        "tests.chats.test_b": {"tests/chats/test_a.py", "tests/chats/helpers.py"}
    }
