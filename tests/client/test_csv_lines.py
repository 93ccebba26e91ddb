"""CSV lines of spreadsheet-safe cells (`client.csv_cells.CsvLines`), one writer for many lines, as exports write them."""

import csv
import io

from deniable.client.csv_cells import CsvLines, csv_row, from_spreadsheet


def test_lines_read_back_as_their_cells_and_no_cell_runs_as_a_formula():
    rows = [["a", 1, 2.5, None, True], ["=HYPERLINK(1)", "-3", "+x", "@y", "\tz"], ["a\r=HYPERLINK(1)", "b"],
            ["plain", "two\nlines"], ["", "after the quoted ones"]]
    lines = CsvLines()
    written = [lines.line(row) for row in rows]
    assert written == [csv_row(row) for row in rows]  # one writer for many lines, or one each: the same text
    assert written[0] == "a,1,2.5,,True\n"
    assert written[1] == "'=HYPERLINK(1),-3,'+x,'@y,'\tz\n"  # a number stays a number
    assert written[2] == '"a\r=HYPERLINK(1)","b"\n' and written[3] == '"plain","two\nlines"\n'
    assert written[4] == ',after the quoted ones\n'  # the quoting of a line before is not carried over
    read = list(csv.reader(io.StringIO("".join(written), newline="")))
    assert len(read) == len(rows)
    assert [from_spreadsheet(cell) for cell in read[1]] == ["=HYPERLINK(1)", "-3", "+x", "@y", "\tz"]
    assert read[2] == ["a\r=HYPERLINK(1)", "b"]
