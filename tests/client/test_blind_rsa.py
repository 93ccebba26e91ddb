"""RSA blind signatures (RFC 9474, RSABSSA-SHA384-PSS-Randomized), the client's side: the CFRG draft's test vector
reproduced step by step (tests/vectors/rfc9474_blind_rsa.json: key, message, salt, inverse, encoded and blinded
message, blind signature, signature), and signatures checked by an independent verifier (`cryptography`'s RSA-PSS)."""

import json
import math
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from deniable.client.blind_rsa import PREFIX_LENGTH, BlindSignatureError, PublicKey, blind, encode, finalize, prepare, verify

VECTOR = json.loads((Path(__file__).parents[1] / "vectors" / "rfc9474_blind_rsa.json").read_text())


def number(name: str) -> int:
    return int(VECTOR[name], 16)


def data(name: str) -> bytes:
    return bytes.fromhex(VECTOR[name])


KEY = PublicKey(number("n"), number("e"))


def sign(blinded: bytes, d: int = number("d"), key: PublicKey = KEY) -> bytes:
    """The signer's part, as the server does it: RSASP1 on the blinded message."""
    return pow(int.from_bytes(blinded, "big"), d, key.n).to_bytes(key.length, "big")


def test_the_vectors_key_is_a_key():
    p, q = number("p"), number("q")
    assert p * q == KEY.n and number("d") * KEY.e % math.lcm(p - 1, q - 1) == 1 and KEY.n.bit_length() == 4096


def test_the_vector_step_by_step():
    message = data("msg")
    assert encode(message, KEY.n.bit_length() - 1, data("salt")) == data("encoded_message")
    blinded, inverse = blind(KEY, message, salt=data("salt"), inverse=number("inv"))
    assert blinded == data("blinded_message") and inverse == number("inv")
    assert sign(blinded) == data("blind_sig")
    assert finalize(KEY, message, data("blind_sig"), inverse) == data("sig")
    assert verify(KEY, message, data("sig"))


def _independent_verify(key: PublicKey, message: bytes, signature: bytes) -> None:
    public = rsa.RSAPublicNumbers(key.e, key.n).public_key()
    public.verify(signature, message, padding.PSS(mgf=padding.MGF1(hashes.SHA384()), salt_length=48), hashes.SHA384())


def test_a_signature_verifies_by_another_implementation():
    _independent_verify(KEY, data("msg"), data("sig"))  # raises InvalidSignature otherwise


@pytest.mark.parametrize("bits", [2048, 3072])
def test_a_fresh_credential_round_trips_on_a_new_key(bits):
    private = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    numbers = private.private_numbers()
    key = PublicKey(numbers.public_numbers.n, numbers.public_numbers.e)
    serial = prepare(b"\x00" * 32)
    assert len(serial) == PREFIX_LENGTH + 32 and serial[:PREFIX_LENGTH] != prepare(b"\x00" * 32)[:PREFIX_LENGTH]
    blinded, inverse = blind(key, serial)
    assert len(blinded) == key.length
    signature = finalize(key, serial, sign(blinded, numbers.d, key), inverse)
    _independent_verify(key, serial, signature)
    assert verify(key, serial, signature)
    again, _ = blind(key, serial)
    assert again != blinded  # a new salt and a new blind each time: two requests for one serial look unrelated


def test_what_is_not_the_keys_signature_is_refused():
    message, signature = data("msg"), data("sig")
    flipped = bytes([signature[0] ^ 1]) + signature[1:]
    assert not verify(KEY, message, flipped)
    assert not verify(KEY, message + b"!", signature)
    assert not verify(KEY, message, signature[1:])  # the wrong length
    assert not verify(KEY, message, KEY.n.to_bytes(KEY.length, "big"))  # not below the modulus
    other = PublicKey(KEY.n, 3)
    assert not verify(other, message, signature)
    with pytest.raises(BlindSignatureError, match="does not unblind") as refused:
        finalize(KEY, message, data("blind_sig"), number("inv") + 1)  # the wrong inverse
    assert refused.value.field == "blind_signature"
    with pytest.raises(BlindSignatureError, match="is 512 bytes"):
        finalize(KEY, message, data("blind_sig")[1:], number("inv"))
