# Sourced after an environment is on PATH (scripts/test.sh: the lock's; scripts/test_versions.sh: another):
# the system packages the tests drive, the lint, the Python suite and the JavaScript client's.
install_debian() {
    if [ "$(id -u)" != 0 ]; then
        echo "missing $* and not root: install it with apt-get" >&2
        return 0
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 "$@"
}
command -v node >/dev/null || install_debian nodejs
# The npm package test packs the JS client and type-checks a consumer (typescript from the npm registry).
command -v npm >/dev/null || install_debian npm
# Browser tests drive the system Chromium; Playwright never downloads a browser of its own.
[ -x /usr/bin/chromium ] || install_debian chromium
# The storage, API and hardening suites also run against a throwaway PostgreSQL cluster
# (tests/postgres.py starts it as the postgres user in a temporary folder).
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || install_debian postgresql
# Habits before tests: lint (ruff) and the layers contract (import-linter, in pyproject.toml).
ruff check .
lint-imports
# Types users' checkers see (py.typed): the client and the analysis, checked as pyproject.toml's [tool.mypy] says.
mypy
# Three workers on the machines' two cores: a quarter of two workers' time went waiting on browsers, servers
# and subprocesses (7:50 with two, 7:02 with three, for 11.5 minutes of CPU in both). Then
# the few tests that bound the process's CPU time, alone: a neighbour on the same core inflates it.
# worksteal: a worker that runs out takes tests queued on another, so one long test does not hold the end of the run
# alone while its queue-mates wait behind it.
python -m pytest -n "${DENIABLE_TEST_WORKERS:-3}" --dist worksteal -m "not serial" "$@" || exit $?
python -m pytest -m serial "$@"
status=$?
[ "$status" -eq 5 ] && status=0  # "no tests collected": the arguments named none of them
[ "$status" -eq 0 ] || exit "$status"
node --test src/deniable/client/js/tests/
