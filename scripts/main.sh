#!/usr/bin/env bash
# The main job: the server with the demo survey on the embedded SQLite default (deniable.db),
# seeded with simulated respondents. Prints the survey link, the admin sign-in page and the admin token.
case " $* " in
*" --help "* | *" -h "*)
    # Said before anything is installed: setting up takes minutes on a fresh machine.
    cat <<'USAGE'
Usage: bash scripts/main.sh [--port N] [--host ADDRESS] [--db FILE_OR_URL] [--simulate N] [--no-serve]

Installs deniable from the lock into .venv (first run only), then starts the server with the demo survey on
deniable.db (SQLite) and 500 simulated respondents, and prints the survey link, the admin sign-in page and the
admin token. Options go to `deniable demo`:
  --port N          the port to listen on (default 8000)
  --host ADDRESS    the address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)
  --db FILE_OR_URL  a SQLite file or a postgresql:// URL (default deniable.db)
  --simulate N      simulated respondents to add (default 500 here)
  --no-serve        set up and simulate only
USAGE
    exit 0 ;;
esac
source "$(dirname "$0")/env.sh"
exec deniable demo --simulate 500 "$@"
