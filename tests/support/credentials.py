"""What a respondent's device does for a credential, done against a store directly (the tests and benchmarks that
need many credentials without a server): the key for the token, a blinded serial, the server's blind signature,
unblinded."""

from __future__ import annotations

import secrets

from deniable.client import blind_rsa
from deniable.server import signing


def device_credential(store, survey_id: str, token: str, serial: bytes | None = None) -> dict:
    """{key, serial, signature} for ``token``'s invitation; ``serial``: the 32 bytes to prepare (random by default)."""
    key = store.credential_key_for_token(survey_id, token, signing.new_key)
    prepared = blind_rsa.prepare(secrets.token_bytes(32) if serial is None else serial)
    blinded, inverse = blind_rsa.blind(key.public, prepared)
    store.issue_credential(survey_id, token, blinded.hex())
    signature = blind_rsa.finalize(key.public, prepared, signing.blind_sign(key.private_pem, blinded), inverse)
    return {"key": key.id, "serial": prepared.hex(), "signature": signature.hex()}
