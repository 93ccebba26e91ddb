#!/usr/bin/env bash
# The whole suite against versions other than the lock's, in an environment of its own (.venv-<which>), leaving .venv
# and uv.lock as they are:
#   bash scripts/test_versions.sh newest        every dependency at the newest pyproject.toml allows: green means the
#                                               lock can move (`.uv/bin/uv lock --upgrade`), red names what would break
#   bash scripts/test_versions.sh oldest-numpy  numpy at the oldest pyproject.toml allows, the rest as new as it admits
# Arguments after the first go to pytest, as with scripts/test.sh.
set -euo pipefail
which="${1:?say newest or oldest-numpy}"
shift
source "$(dirname "$0")/env.sh"
environment=".venv-$which"
.uv/bin/uv venv --quiet --allow-existing --python "$(command -v python3)" "$environment"
case "$which" in
    newest)
        .uv/bin/uv pip install --quiet --compile-bytecode --upgrade --python "$environment/bin/python" \
            -e ".[server,analysis,test]" ;;
    oldest-numpy)
        # Resolved afresh around the floor: the lock's pandas and scipy need a newer numpy than the floor.
        floor=$(sed -n 's/.*"numpy>=\([0-9.]*\)".*/\1/p' pyproject.toml | head -1)
        .uv/bin/uv pip install --quiet --compile-bytecode --python "$environment/bin/python" \
            -e ".[server,analysis,test]" "numpy==$floor.*" ;;
    *)
        echo "unknown environment '$which': say newest or oldest-numpy" >&2
        exit 2 ;;
esac
"$environment/bin/python" -c 'import numpy, scipy; print(f"numpy {numpy.__version__}, scipy {scipy.__version__}")'
export PATH="$PWD/$environment/bin:$PATH" VIRTUAL_ENV="$PWD/$environment"
source scripts/suite.sh
