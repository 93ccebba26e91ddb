"""Blind-signed credentials end to end: an invitation's token is exchanged for a credential the server cannot join to
the response it later carries; each credential answers once, under 64 concurrent sends too; every forged, reused or
misshapen part is refused by field with nothing stored; tokens spent the old way keep working."""

import concurrent.futures
import json
import secrets
import urllib.error
import urllib.request

import pytest

from deniable.client import Survey, TokenAlreadyUsed, blind_rsa, submit
from deniable.client.submit import obtain_credential
from deniable.server import signing
from tests.server.conftest import ANSWERS
from tests.support.credentials import device_credential

pytestmark = pytest.mark.both_engines


def _body(survey: Survey, **extra) -> dict:
    return {"spec_hash": survey.hash, "idempotency_key": secrets.token_hex(16), "reports": survey.randomize(ANSWERS),
            **extra}


def _token_survey(store, survey, count=3, **options):
    store.add_survey(survey, access="token")
    return store.issue_tokens("tax", count, **options)


def _rows(store, table: str) -> list:
    return store.engine.execute(f"SELECT * FROM {table}").fetchall()


def test_a_token_becomes_a_credential_and_the_response_carries_no_trace_of_the_token(live_server, survey, store):
    [token, other, _] = _token_survey(store, survey)
    sent = submit(live_server, "tax", ANSWERS, token=token)
    assert sent.created and store.response_count("tax") == 1
    assert store.token_status("tax", token) == "unused"  # its bit was never set: the response spent a serial
    assert len(_rows(store, "credential_issues")) == 1 and len(_rows(store, "spent_serials")) == 1
    [(slot,)] = store.engine.execute("SELECT slot FROM credential_issues").fetchall()
    [(serial,)] = store.engine.execute("SELECT serial FROM spent_serials").fetchall()
    response = store.engine.execute("SELECT * FROM responses").fetchone()
    assert serial not in [str(value) for value in response] and token not in str(_rows(store, "spent_serials"))
    assert isinstance(slot, int)
    with pytest.raises(TokenAlreadyUsed) as second:  # a second credential for one invitation
        submit(live_server, "tax", ANSWERS, token=token)
    assert second.value.field == "token" and "received its credential" in second.value.message
    assert store.response_count("tax") == 1
    assert submit(live_server, "tax", ANSWERS, token=other).created and store.response_count("tax") == 2


def test_the_same_blinded_message_is_signed_again_and_another_is_refused(client, survey, store):
    [token, *_] = _token_survey(store, survey)
    offered = client.post("/api/v1/surveys/tax/credential-key", json={"token": token}).get_json()
    key = blind_rsa.PublicKey(int(offered["modulus"], 16), offered["exponent"])
    assert key.n.bit_length() == signing.KEY_BITS and offered["key"]
    serial = blind_rsa.prepare(secrets.token_bytes(32))
    blinded, inverse = blind_rsa.blind(key, serial)
    ask = {"token": token, "key": offered["key"], "blinded": blinded.hex()}
    first, again = (client.post("/api/v1/surveys/tax/credentials", json=ask) for _ in range(2))
    assert first.status_code == again.status_code == 200 and first.get_json() == again.get_json()
    signature = blind_rsa.finalize(key, serial, bytes.fromhex(first.get_json()["blind_signature"]), inverse)
    assert blind_rsa.verify(key, serial, signature)
    other, _ = blind_rsa.blind(key, blind_rsa.prepare(secrets.token_bytes(32)))
    refused = client.post("/api/v1/surveys/tax/credentials", json={**ask, "blinded": other.hex()})
    assert refused.status_code == 409 and refused.get_json()["error"]["field"] == "token"
    assert len(_rows(store, "credential_issues")) == 1


def test_bad_issuance_requests_are_refused_by_field_and_record_nothing(client, survey, store):
    [token, *_] = _token_survey(store, survey)
    offered = client.post("/api/v1/surveys/tax/credential-key", json={"token": token}).get_json()
    n = int(offered["modulus"], 16)
    length = (n.bit_length() + 7) // 8
    cases = [
        ({"token": "not-a-token", "key": offered["key"], "blinded": "00" * length}, 422, "token"),
        ({"token": token, "key": offered["key"], "blinded": "00" * (length - 1)}, 422, "blinded"),
        ({"token": token, "key": offered["key"], "blinded": "ff" * length}, 422, "blinded"),  # not below the modulus
        ({"token": token, "key": offered["key"], "blinded": "zz"}, 422, "blinded"),
        ({"token": token, "key": "0" * 32, "blinded": "00" * length}, 409, "key"),
    ]
    for body, status, field in cases:
        answer = client.post("/api/v1/surveys/tax/credentials", json=body)
        assert (answer.status_code, answer.get_json()["error"]["field"]) == (status, field), body
    assert client.post("/api/v1/surveys/tax/credential-key", json={"token": "nope"}).status_code == 422
    assert _rows(store, "credential_issues") == []


def _credential(base, token):
    return obtain_credential(base, "tax", token, retries=0)


def _post(base: str, body: dict) -> int:
    """POST one response over HTTP; its status."""
    request = urllib.request.Request(f"{base}/api/v1/surveys/tax/responses", method="POST",
                                     data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def test_forged_reused_and_wrong_key_credentials_are_refused_and_nothing_is_stored(live_server, client, survey, store):
    [token, second, *_] = _token_survey(store, survey)
    credential = _credential(live_server, token)
    signature = bytearray.fromhex(credential["signature"])
    signature[-1] ^= 1
    store.add_survey(Survey.from_dict({**survey.to_dict(), "id": "elsewhere"}), access="token")
    [foreign] = store.issue_tokens("elsewhere", 1)
    foreign_credential = obtain_credential(live_server, "elsewhere", foreign, retries=0)
    cases = [
        ({**credential, "signature": signature.hex()}, 422, "credential.signature"),
        ({**credential, "signature": credential["signature"][:-2]}, 422, "credential.signature"),
        ({**credential, "serial": credential["serial"][:-2]}, 422, "credential.serial"),
        ({**credential, "key": foreign_credential["key"]}, 422, "credential.key"),
        (foreign_credential, 422, "credential.key"),
        ({"key": credential["key"], "serial": credential["serial"]}, 422, "credential"),
    ]
    for forged, status, field in cases:
        answer = client.post("/api/v1/surveys/tax/responses", json=_body(survey, credential=forged))
        assert (answer.status_code, answer.get_json()["error"]["field"]) == (status, field), forged
    both = client.post("/api/v1/surveys/tax/responses", json=_body(survey, credential=credential, token=second))
    assert both.status_code == 422 and both.get_json()["error"]["field"] == "credential"
    assert store.response_count("tax") == 0 and _rows(store, "spent_serials") == []
    assert client.post("/api/v1/surveys/tax/responses", json=_body(survey, credential=credential)).status_code == 201
    reused = client.post("/api/v1/surveys/tax/responses", json=_body(survey, credential=credential))
    assert reused.status_code == 409 and reused.get_json()["error"]["field"] == "credential"
    assert store.response_count("tax") == 1


def test_a_credential_answers_once_under_64_concurrent_sends(live_server, survey, store):
    [token, *_] = _token_survey(store, survey)
    credential = _credential(live_server, token)

    bodies = [_body(survey, credential=credential) for _ in range(64)]
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(lambda body: _post(live_server, body), bodies))
    assert sorted(set(statuses)) == [201, 409] and statuses.count(201) == 1, statuses
    assert store.response_count("tax") == 1 and len(_rows(store, "spent_serials")) == 1


def test_a_token_with_a_credential_is_not_spent_itself_nor_the_other_way_round(live_server, client, survey, store):
    [with_credential, spent_directly, *_] = _token_survey(store, survey)
    _credential(live_server, with_credential)
    direct = client.post("/api/v1/surveys/tax/responses", json=_body(survey, token=with_credential))
    assert direct.status_code == 409 and direct.get_json()["error"]["field"] == "token"
    assert client.post("/api/v1/surveys/tax/responses", json=_body(survey, token=spent_directly)).status_code == 201
    with pytest.raises(TokenAlreadyUsed):  # the old path: a token spent as itself earns no credential afterwards
        _credential(live_server, spent_directly)
    credential = _credential(live_server, _token_survey(store, survey, 1)[0])
    batch = client.post("/api/v1/surveys/tax/responses:batch", json={"items": [
        _body(survey, token=with_credential), _body(survey, credential=credential), _body(survey, credential=credential)]})
    assert [(r["status"], r.get("error", {}).get("field")) for r in batch.get_json()["results"]] == [
        (409, "token"), (201, None), (409, "credential")]
    assert store.response_count("tax") == 2


def test_each_frame_cell_and_each_version_has_its_own_key_and_the_response_carries_its_cell(live_server, survey, store):
    frame = [{"stratum": s} for s in ["north"] * 5 + ["south"] * 5]
    spec = {**survey.to_dict(), "sample": {"frame": ["stratum"], "strata": "stratum"}}
    framed = Survey.from_dict(spec)
    store.add_survey(framed, access="token")
    tokens = store.issue_tokens("tax", frame=frame)
    first, last = (_credential(live_server, tokens[i]) for i in (0, 9))
    assert first["key"] != last["key"]
    cells = dict(store.engine.execute("SELECT id, frame_cell FROM credential_keys").fetchall())
    client_survey = Survey.from_dict(spec)
    for credential in (first, last):
        assert _post(live_server, _body(client_survey, credential=credential)) == 201
    stored = sorted(cell for (cell,) in store.engine.execute("SELECT frame_cell FROM responses").fetchall())
    assert stored == sorted(cells[c["key"]] for c in (first, last)) and len(set(stored)) == 2
    # a new version signs with new keys; a credential issued under the old one still answers
    held = _credential(live_server, tokens[1])
    store.add_survey(Survey.from_dict({**spec, "title": "Taxes, again"}))
    renewed = _credential(live_server, tokens[2])
    assert renewed["key"] not in (first["key"], held["key"]) and len(cells) < len(
        store.engine.execute("SELECT id FROM credential_keys").fetchall())
    assert submit(live_server, "tax", ANSWERS, token=tokens[3]).created
    assert store.response_count("tax") == 3


def test_private_keys_are_exported_nowhere(runner, db_path, live_server, survey, store, tmp_path):
    from deniable.server.cli import main
    from deniable.server.export_formats import EXPORT_FORMATS

    [token, *_] = _token_survey(store, survey)
    submit(live_server, "tax", ANSWERS, token=token)
    [(private,)] = store.engine.execute("SELECT private_key FROM credential_keys").fetchall()
    secret_line = private.splitlines()[1].encode()
    for form in EXPORT_FORMATS:
        target = tmp_path / f"export.{EXPORT_FORMATS[form].suffix}"
        out = runner.invoke(main, ["export", "tax", "--db", db_path, "--format", form, "--output", str(target)])
        assert out.exit_code == 0, out.output
        assert secret_line not in target.read_bytes(), form


def test_a_server_without_credentials_gets_the_token_itself(app, survey, store):
    """An older server has no credential routes (404 with no field): `submit` sends the token, as it always did."""
    from tests.support.serving import served

    [token, *_] = _token_survey(store, survey)

    def older(environ, start_response):
        if environ["PATH_INFO"].endswith("/credential-key"):
            environ["PATH_INFO"] = "/api/v1/no-such-route"
        return app(environ, start_response)

    with served(older) as base:
        assert submit(base, "tax", ANSWERS, token=token).created
    assert store.token_status("tax", token) == "used" and _rows(store, "credential_issues") == []


def test_reminders_go_to_those_who_have_not_started(live_server, survey, store):
    """Who answered with a credential is known to nobody: a reminder skips whoever opened the survey (received a
    credential) as it skips whoever answered with the token itself, and goes to the others."""
    store.add_survey(survey, access="token")
    store.add_contacts("tax", [{"address": f"p{i}@example.net", "language": None, "frame": None} for i in range(4)])
    tokens = {}
    while (contact := store.claim_contact("tax", "invite")) is not None:
        store.confirm_sent("tax", contact["id"])
        tokens[contact["address"]] = contact["token"]
    submit(live_server, "tax", ANSWERS, token=tokens["p0@example.net"])  # answered with a credential
    _credential(live_server, tokens["p1@example.net"])  # opened, not (yet) answered
    old_path = _body(survey, token=tokens["p2@example.net"])
    store.submit("tax", old_path["spec_hash"], old_path["idempotency_key"], old_path["reports"], old_path["token"])
    assert store.due_contacts("tax", "remind", max_reminders=3, wait_days=0) == {None: 1}
    assert store.contact_summary("tax")["started"] == 3


def test_an_admin_lets_a_lost_credential_be_issued_again_and_the_audit_log_says_so(runner, db_path, live_server, survey,
                                                                                   store):
    from deniable.server.cli import main

    [token, unopened, *_] = _token_survey(store, survey)
    _credential(live_server, token)  # then the phone is lost
    with pytest.raises(TokenAlreadyUsed):
        _credential(live_server, token)
    done = runner.invoke(main, ["reissue", "tax", "--token", token, "--db", db_path])
    assert done.exit_code == 0, done.output
    assert submit(live_server, "tax", ANSWERS, token=token).created
    [line] = [entry for entry in store.audit_log() if entry["action"] == "credential re-issued"]
    assert line["survey_id"] == "tax" and token not in str(line)
    for refused in (unopened, "not-a-token", "-starts-with-a-dash"):  # nothing to re-issue: said, exit 1, not audited
        out = runner.invoke(main, ["reissue", "tax", "--token", refused, "--db", db_path])
        assert out.exit_code == 1 and "token:" in out.output and "Traceback" not in out.output
    assert len([e for e in store.audit_log() if e["action"] == "credential re-issued"]) == 1


def test_the_form_without_javascript_says_its_invitation_goes_with_the_answers(client, survey, store):
    import json as json_module
    from importlib.resources import files

    [token, *_] = _token_survey(store, survey)
    said = json_module.loads(files("deniable.client").joinpath("words/en.json").read_text())["invitation_no_js"]
    invited = client.get(f"/s/tax?t={token}").get_data(as_text=True)
    form = invited[invited.index('<form id="coin-form"'):]
    assert said in form and f'name="token" value="{token}"' in form
    store.add_survey(Survey.from_dict({**survey.to_dict(), "id": "open"}))
    opened = client.get("/s/open").get_data(as_text=True)
    assert said not in opened[opened.index('<form id="coin-form"'):]  # the page's words hold it; its form does not


def test_a_full_quota_refuses_a_credential_and_leaves_it_unspent(store):
    from deniable import storage

    survey = Survey.from_dict({"id": "field", "title": "Fieldwork", "quotas": [{"question": "region", "limit": 1}],
                               "questions": [{"id": "region", "type": "choice", "text": "Region?",
                                              "options": ["north", "south"], "privacy": "none"},
                                             {"id": "dodged", "type": "yes_no", "text": "Dodged?"}]})
    store.add_survey(survey, access="token")
    first, second = (device_credential(store, "field", token) for token in store.issue_tokens("field", 2))
    answers = {"region": "north", "dodged": "no"}
    store.submit("field", survey.hash, "key-000001", survey.randomize(answers), credential=first)
    with pytest.raises(storage.Conflict) as full:
        store.submit("field", survey.hash, "key-000002", survey.randomize(answers), credential=second)
    assert full.value.field == "quota" and len(_rows(store, "spent_serials")) == 1  # rolled back with its response
    assert store.submit("field", survey.hash, "key-000003", survey.randomize({**answers, "region": "south"}),
                        credential=second)[1]


def test_a_repeated_survey_binds_the_wave_in_the_key(store, pulse):
    from deniable import storage
    from deniable.client.memo import Memo
    from tests.databases import PANEL_ANSWERS

    store.add_survey(pulse, access="token")
    store.open_wave("pulse", "w1")
    early, late = store.issue_tokens("pulse", 2)
    in_w1 = device_credential(store, "pulse", early)
    store.open_wave("pulse", "w2")
    in_w2 = device_credential(store, "pulse", late)
    assert in_w1["key"] != in_w2["key"]
    reports = pulse.randomize(PANEL_ANSWERS, memo=Memo.from_secret(bytes(32)))
    with pytest.raises(storage.Conflict) as closed:  # issued for a wave that has closed: not counted in the next
        store.submit("pulse", pulse.hash, "key-000001", reports, credential=in_w1)
    assert closed.value.field == "credential" and "'w1'" in closed.value.message
    acknowledgement, created = store.submit("pulse", pulse.hash, "key-000002", reports, credential=in_w2)
    assert created and acknowledgement["wave"] == "w2"


def test_a_split_ballot_keeps_its_arms_and_a_batch_its_one_transaction(store):
    from tests.conftest import EXAMPLES

    survey = Survey.from_file(EXAMPLES / "split_ballot.yaml")
    store.add_survey(survey, access="token")
    credentials = [device_credential(store, "validation", token) for token in store.issue_tokens("validation", 3)]
    arms = {"dodged": "direct", "took": "randomized", "cheated": "randomized"}
    answers = {"region": "North", "dodged": "yes", "took": "same", "cheated": {"group": "a", "report": "no"}}
    items = [(survey.hash, f"key-{i:06d}", survey.randomize(answers, arms=arms), None, None, None, credential)
             for i, credential in enumerate(credentials)]
    outcomes = store.submit_many("validation", items + [items[0][:1] + ("key-999999",) + items[0][2:]])
    assert [isinstance(o, tuple) for o in outcomes] == [True, True, True, False]
    assert outcomes[-1].field == "credential" and store.response_count("validation") == 3
    stored = [row["reports"]["dodged"] for row in store.export("validation")]
    assert stored == [{"arm": "direct", "report": "yes"}] * 3  # the direct arm as answered, as with a token


def test_both_verifiers_agree_on_every_signature(store, survey, monkeypatch):
    """The store verifies with cryptography's RSA-PSS where it is installed and with the client's own otherwise:
    the same valid signature passes both, and the same one bit changed fails both."""
    from deniable.storage import credentials

    [token] = _token_survey(store, survey, 1)
    credential = device_credential(store, "tax", token)
    public, _, _ = store.credentials.public_key("tax", credential["key"])
    serial, signature = bytes.fromhex(credential["serial"]), bytearray.fromhex(credential["signature"])
    with_openssl = credentials._verify(public, serial, bytes(signature))
    monkeypatch.setattr(credentials, "_openssl_key", lambda n, e: None)
    assert with_openssl and credentials._verify(public, serial, bytes(signature))
    for position in (0, len(signature) // 2, len(signature) - 1):
        signature[position] ^= 0x10
        assert not credentials._verify(public, serial, bytes(signature))
        monkeypatch.undo()
        assert not credentials._verify(public, serial, bytes(signature))
        monkeypatch.setattr(credentials, "_openssl_key", lambda n, e: None)
        signature[position] ^= 0x10


def test_rfc_9474s_randomized_vector_through_the_client_and_the_servers_signing():
    """RFC 9474's RSABSSA-SHA384-PSS-Randomized vector (tests/vectors/rfc9474_randomized.json): the prepared message
    with its prefix, the blinded message, the server's blind signature (`signing.blind_sign`, from a PEM of the
    vector's primes) and the final signature, byte for byte."""
    from pathlib import Path

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    vector = json.loads((Path(__file__).parents[1] / "vectors" / "rfc9474_randomized.json").read_text())
    data, number = (lambda name: bytes.fromhex(vector[name])), (lambda name: int(vector[name], 16))
    prepared = data("msg_prefix") + data("msg")
    assert prepared == data("input_msg") and len(data("msg_prefix")) == blind_rsa.PREFIX_LENGTH
    assert number("sLen") == blind_rsa.SALT_LENGTH
    key = blind_rsa.PublicKey(number("n"), number("e"))
    blinded, inverse = blind_rsa.blind(key, prepared, salt=data("salt"), inverse=number("inv"))
    assert blinded == data("blinded_msg")
    p, q, d = number("p"), number("q"), number("d")
    private = rsa.RSAPrivateNumbers(p, q, d, rsa.rsa_crt_dmp1(d, p), rsa.rsa_crt_dmq1(d, q), rsa.rsa_crt_iqmp(p, q),
                                    rsa.RSAPublicNumbers(key.e, key.n)).private_key()
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    assert signing.blind_sign(pem, blinded) == data("blind_sig")
    assert blind_rsa.finalize(key, prepared, data("blind_sig"), inverse) == data("sig")
    assert blind_rsa.verify(key, prepared, data("sig"))


def test_the_python_outbox_keeps_a_responses_credential(tmp_path):
    from deniable.client.submit import Outbox

    outbox = Outbox(tmp_path / "outbox.json")
    credential = {"key": "k1", "serial": "ab" * 64, "signature": "cd" * 256}
    outbox.add("http://x", "tax", {"spec_hash": "h", "idempotency_key": "k" * 16, "reports": {"dodged": "no"},
                                   "credential": credential})
    assert outbox.entries()[0]["body"]["credential"] == credential
