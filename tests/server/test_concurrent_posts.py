"""The server commits concurrent single posts together (group commit, `storage.GroupCommit`), each acknowledged after its commit."""

import pytest

from tests.storage.test_group_commit import body

pytestmark = pytest.mark.both_engines



def test_the_server_commits_concurrent_posts_together(app, client, survey):
    committer = app.extensions["deniable_group_commit"]
    statuses = [client.post("/api/v1/surveys/tax/responses",
                            json=dict(zip(("spec_hash", "idempotency_key", "reports"), body(survey)))).status_code
                for _ in range(3)]
    assert statuses == [201, 201, 201] and committer.responses == 3
