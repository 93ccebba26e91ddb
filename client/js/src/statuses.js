// What the server's answer to a sent response means to the client, written by scripts/statuses_js.py from
// client/statuses.py: do not edit. A response is kept (in an outbox) until an answer whose retry is false.
export const STATUS_TABLE = Object.freeze([
  {"status": 200, "field": null, "kind": "stored", "retry": false, "meaning": "stored before: a retry of a response the server already has (created false)"},
  {"status": 201, "field": null, "kind": "stored", "retry": false, "meaning": "stored"},
  {"status": 400, "field": null, "kind": "refused", "retry": false, "meaning": "the request is malformed (not JSON, a field of the wrong type)"},
  {"status": 404, "field": null, "kind": "survey_not_found", "retry": false, "meaning": "no survey with this id"},
  {"status": 404, "field": "spec_hash", "kind": "stale_spec", "retry": false, "meaning": "the spec hash names no version of this survey: fetch the survey again and ask again"},
  {"status": 408, "field": null, "kind": "retry_later", "retry": true, "meaning": "the request timed out on its way"},
  {"status": 409, "field": "token", "kind": "token_used", "retry": false, "meaning": "this invitation has answered already; each answers once"},
  {"status": 409, "field": "wave", "kind": "no_wave_open", "retry": false, "meaning": "the survey is repeated and no wave is open now"},
  {"status": 409, "field": "survey_id", "kind": "retry_later", "retry": true, "meaning": "the survey opens later (its spec's opens): send it again once it is open"},
  {"status": 410, "field": null, "kind": "closed", "retry": false, "meaning": "the survey is closed"},
  {"status": 410, "field": "wave", "kind": "wave_closed", "retry": false, "meaning": "the wave this response was for has closed; it was not counted in another"},
  {"status": 413, "field": null, "kind": "refused", "retry": false, "meaning": "the request is too large"},
  {"status": 422, "field": null, "kind": "refused", "retry": false, "meaning": "a report or field is invalid; the error's field names it"},
  {"status": 425, "field": null, "kind": "retry_later", "retry": true, "meaning": "too early: send it again"},
  {"status": 429, "field": null, "kind": "retry_later", "retry": true, "meaning": "too many requests: send it again after Retry-After"},
  {"status": 500, "field": null, "kind": "retry_later", "retry": true, "meaning": "the server failed; nothing was acknowledged"},
  {"status": 502, "field": null, "kind": "retry_later", "retry": true, "meaning": "a proxy could not reach the server"},
  {"status": 503, "field": null, "kind": "retry_later", "retry": true, "meaning": "the server or its database cannot take it now: send it again after Retry-After"},
  {"status": 504, "field": null, "kind": "retry_later", "retry": true, "meaning": "a proxy timed out waiting for the server"},
  {"status": 507, "field": null, "kind": "retry_later", "retry": true, "meaning": "the server's disk is full: nothing was stored; send it again after Retry-After"},
].map(Object.freeze));
