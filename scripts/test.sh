#!/usr/bin/env bash
# The whole test suite: Python (pytest) and JavaScript (node --test).
source "$(dirname "$0")/env.sh"
if ! command -v node >/dev/null; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 nodejs
fi
python -m pytest "$@"
node --test client/js/tests/
