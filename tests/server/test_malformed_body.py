"""A body the server cannot read (gunicorn raises its chunk parser's error while the app reads, as for a chunk size
of "ZZ") is a 400 naming the body on every endpoint that reads one, never a 500 with a logged traceback."""

import logging

import pytest

from tests.server.conftest import ADMIN


class ChunkedGarbage:
    """What gunicorn hands the app for `Transfer-Encoding: chunked` with a malformed chunk: a stream whose read raises
    the parser's error."""

    def read(self, *args):
        from gunicorn.http.errors import InvalidChunkSize

        raise InvalidChunkSize(b"ZZ")

    readline = read

    def __iter__(self):
        return self

    def __next__(self):
        self.read()


@pytest.mark.parametrize("path, content_type", [
    ("/api/v1/surveys/tax/responses", "application/json"),
    ("/api/v1/surveys/tax/responses:batch", "application/json"),
    ("/s/tax/submit", "application/x-www-form-urlencoded"),
    ("/admin/login", "application/x-www-form-urlencoded"),
    ("/admin/surveys", "multipart/form-data; boundary=x"),
])
def test_a_body_that_cannot_be_read_is_a_400(app, survey, path, content_type, caplog):
    app.config["PROPAGATE_EXCEPTIONS"] = False  # answer as in production: an unexpected error would be a 500
    client = app.test_client()
    caplog.set_level(logging.ERROR)
    answer = client.post(path, headers={"Content-Type": content_type, "Transfer-Encoding": "chunked",
                                        "Authorization": f"Bearer {ADMIN}"},
                         environ_overrides={"wsgi.input": ChunkedGarbage(), "wsgi.input_terminated": True})
    assert answer.status_code in (400, 403), answer.get_data(as_text=True)[:300]  # 403: the sign-in's CSRF, unread
    if answer.is_json:
        assert answer.get_json()["error"]["field"] == "body"
    assert "Traceback" not in caplog.text and not [r for r in caplog.records if r.exc_info]
