#!/usr/bin/env bash
# The whole test suite: Python (pytest, including real-browser tests in Debian's Chromium)
# and the JavaScript client (node --test).
source "$(dirname "$0")/env.sh"
source scripts/suite.sh
