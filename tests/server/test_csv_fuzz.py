"""Frame and contact CSV files fuzzed: whatever a file holds (quotes, separators and line breaks in cells, ragged rows,
contact-looking values, controls, long cells, nothing), `deniable tokens --frame` and `deniable invite --contacts`
either take it or refuse it in one line naming the file, never a traceback, and a refused file stores nothing."""

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deniable import storage
from deniable.client import Survey
from deniable.server.cli import main
from tests.conftest import EXAMPLES
from tests.server.conftest import table_rows
from tests.server.test_frame import FRAME_SAMPLE

CELL = st.one_of(
    st.sampled_from(["A", "B", "A1", "1.5", "3", "0", "-2", "", " ", "nan", "inf", "area-1", "someone@example.org",
                     "+44 20 7946 0000", "https://example.org", "x" * 300, "é", "\u2028", "a,b", '"q"', "line\nbreak",
                     "\x00", "=1+1", "token", "email"]),
    st.text(alphabet=string.printable + "éü中\u00a0", max_size=12))
ROW = st.lists(CELL, min_size=0, max_size=6)


def _csv(header, rows) -> str:
    def quoted(value):
        return '"' + value.replace('"', '""') + '"' if any(c in value for c in ',"\n\r') else value
    return "\n".join(",".join(quoted(v) for v in row) for row in [header, *rows]) + "\n"


HEADERS = st.one_of(st.just(["stratum", "psu", "weight", "area"]), st.just(["email", "stratum", "psu", "weight", "area"]),
                    st.just(["email", "language"]), st.just(["stratum", "psu", "weight", "area", "token"]), ROW)
#: Values that pass where a column wants them, so the fuzz reaches the checks behind the shape of the file.
PLAUSIBLE = {"stratum": st.sampled_from(["A", "B", "C"]), "psu": st.sampled_from(["A1", "A2", "B1"]),
             "weight": st.sampled_from(["1.5", "3", "6.25", "0", "-1", "abc"]), "area": st.sampled_from(["x", "y"]),
             "email": st.sampled_from(["a@example.org", "b@example.org", "not an address", "c@example.org"]),
             "language": st.sampled_from(["en", "fr", "", "xx"])}


@st.composite
def files(draw):
    """A header, then rows mostly as long as it (of plausible values mixed with anything), some ragged."""
    header = draw(HEADERS)
    rows = []
    for _ in range(draw(st.integers(0, 10))):
        if draw(st.integers(0, 9)) == 0:
            rows.append(draw(ROW))
            continue
        rows.append([draw(st.one_of(PLAUSIBLE[name], CELL) if name in PLAUSIBLE else CELL) for name in header])
    return header, rows


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(drawn=files(), repeat=st.integers(1, 6))
def test_a_fuzzed_frame_or_contact_file_is_taken_or_refused_in_one_line(tmp_path_factory, drawn, repeat):
    header, rows = drawn
    folder = tmp_path_factory.mktemp("fuzz")
    db = str(folder / "fuzz.db")
    survey = Survey.from_dict({**Survey.from_file(EXAMPLES / "tax.yaml").to_dict(), "sample": FRAME_SAMPLE})
    with storage.Store(db) as store:
        store.add_survey(survey)
    target = folder / "file.csv"
    target.write_text(_csv(header, rows * repeat), encoding="utf-8")  # repeated rows: cells of several invitations
    from click.testing import CliRunner

    runner = CliRunner()
    for command in (["tokens", "tax", "--frame", str(target), "--db", db],
                    ["invite", "tax", "--contacts", str(target), "--base-url", "https://survey.example.org",
                     "--from", "team@example.org", "--db", db, "--dry-run"],
                    ["invite", "tax", "--contacts", str(target), "--base-url", "https://survey.example.org",
                     "--from", "team@example.org", "--db", db]):
        with storage.Store(db) as store:
            before = len(table_rows(store, "tokens")), len(table_rows(store, "contacts"))
        result = runner.invoke(main, command, env={"DENIABLE_SMTP_URL": "smtp://127.0.0.1:9"})
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), (command, result.output)
        if result.exit_code != 0 and command[0] == "tokens" or "--dry-run" in command:
            with storage.Store(db) as store:  # refused, or only looked at: nothing stored
                assert (len(table_rows(store, "tokens")), len(table_rows(store, "contacts"))) == before, result.output
        if result.exit_code != 0:  # one line, naming the file or the row (a cell's line break is shown escaped)
            assert len(result.output.strip().splitlines()) == 1 and result.output.startswith("Error: "), result.output
