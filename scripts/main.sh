#!/usr/bin/env bash
# The main job: the server with the demo survey on the embedded SQLite default (deniable.db),
# seeded with simulated respondents. Prints the survey link, the admin sign-in page and the admin token.
source "$(dirname "$0")/env.sh"
exec deniable demo --simulate 500 "$@"
