# Sourced by the README's commands: create or reuse .venv and install the project into it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
if [ ! -x .venv/bin/uv ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check uv
fi
.venv/bin/uv pip install --quiet --python .venv/bin/python -e ".[server,analysis,test]"
export PATH="$PWD/.venv/bin:$PATH"
