"""deniable: surveys with plausible deniability.

Four layers, each importing only those below it (`lint-imports` keeps it so):

* `deniable.client`: the questionnaire, the mechanisms and their exact channels, the randomization on the
  respondent's device (standard library only; `client/js` is its JavaScript twin);
* `deniable.storage`: the only layer that speaks SQL (SQLite and PostgreSQL);
* `deniable.analysis`: estimates, intervals and tables from stored reports;
* `deniable.server`: the web app, the dashboard and the ``deniable`` command.

Nothing is imported here, so ``import deniable.client`` stays as light as the client.
"""
