# Sourced by the README's commands: create or reuse .venv and install the project into it from the lock (uv.lock),
# so every machine runs the same versions. pyproject.toml keeps the library's own ranges loose for users; the lock
# pins what this repository tests (`bash scripts/test_versions.sh newest` says when to move it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# uv itself, pinned, in a folder of its own: `uv sync` makes .venv exactly the lock, which would remove a uv kept there.
UV_VERSION=0.13.9
if [ ! -x .uv/bin/uv ] || [ "$(.uv/bin/uv --version 2>/dev/null | cut -d' ' -f2)" != "$UV_VERSION" ]; then
    python3 -m venv --clear .uv
    .uv/bin/python -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"
fi
# The machine's own Python, never one uv would download.
export UV_PYTHON_DOWNLOADS=never
# Bytecode compiled at install (uv does not by default): without it every process compiled scipy.stats again
# (2.9 s, against 0.7 s), and `deniable survey check` took 3.3 s where it takes 1.3.
if ! .uv/bin/uv sync --locked --quiet --compile-bytecode --python "$(command -v python3)" \
        --extra server --extra analysis --extra test 2> .uv/sync.log; then
    if grep -qi "lockfile.*needs to be updated" .uv/sync.log; then
        echo "uv.lock does not match pyproject.toml: refresh it with '.uv/bin/uv lock', then commit uv.lock" >&2
    else
        cat .uv/sync.log >&2
    fi
    exit 1
fi
# The project's own modules too (an editable install is not compiled): where PYTHONDONTWRITEBYTECODE is set, as on
# some CI images, Python never writes them, and every `deniable` command compiled 112 modules again (0.13-0.2 s of a
# demo `deniable estimate`'s 0.8 s). Unchanged files are skipped: 0.03 s.
.venv/bin/python -m compileall -q src
export PATH="$PWD/.venv/bin:$PATH"
