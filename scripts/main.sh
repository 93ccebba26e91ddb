#!/usr/bin/env bash
# The main job: check the demo survey and print its privacy summary.
source "$(dirname "$0")/env.sh"
deniable survey check examples/tax.yaml "$@"
