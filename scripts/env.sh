# Sourced by the README's commands: create or reuse .venv and install the project into it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
if [ ! -x .venv/bin/uv ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check uv
fi
# Bytecode compiled at install (uv does not by default): without it every process compiled scipy.stats again
# (2.9 s, against 0.7 s), and `deniable survey check` took 3.3 s where it takes 1.3.
.venv/bin/uv pip install --quiet --compile-bytecode --python .venv/bin/python -e ".[server,analysis,test]"
# The project's own modules too (an editable install is not compiled): where PYTHONDONTWRITEBYTECODE is set, as on
# some CI images, Python never writes them, and every `deniable` command compiled 112 modules again (0.13-0.2 s of a
# demo `deniable estimate`'s 0.8 s). Unchanged files are skipped: 0.03 s.
.venv/bin/python -m compileall -q src
export PATH="$PWD/.venv/bin:$PATH"
