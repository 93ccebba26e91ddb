"""RSA blind signatures, the respondent's side (RFC 9474, RSABSSA-SHA384-PSS-Randomized): the device makes a random
serial, blinds it so the server signs it without seeing it, and unblinds the answer into an ordinary RSA-PSS
signature (SHA-384, MGF1-SHA-384, 48-byte salt) on the serial, which anyone verifies with the public key. The server
learns that an invitation received a credential, and later that a serial was spent, and cannot join the two.

Standard library only: big-integer arithmetic is Python's own ``pow``; the signing key's side is the server's.
"""

from __future__ import annotations

import hashlib
import math
import secrets
from dataclasses import dataclass

from .errors import DeniableError

#: RSABSSA-SHA384-PSS-Randomized: SHA-384 for the message and MGF1, a salt of the hash's length, a 32-byte random
#: prefix on the message (`prepare`).
HASH_LENGTH = 48
SALT_LENGTH = 48
PREFIX_LENGTH = 32


class BlindSignatureError(DeniableError):
    """A blind signature that does not verify, or a key or message it cannot be made with (``field`` names which)."""


@dataclass(frozen=True)
class PublicKey:
    """The signer's RSA public key: modulus ``n``, exponent ``e``."""

    n: int
    e: int

    @property
    def length(self) -> int:
        """The modulus's length in bytes (of every blinded message and signature)."""
        return (self.n.bit_length() + 7) // 8


def prepare(message: bytes) -> bytes:
    """The message as signed: 32 random bytes, then the message (the Randomized variant: the signer cannot choose
    what it signs, whatever message the client chose)."""
    return secrets.token_bytes(PREFIX_LENGTH) + message


def _mgf1(seed: bytes, length: int) -> bytes:
    mask = b"".join(hashlib.sha384(seed + counter.to_bytes(4, "big")).digest()
                    for counter in range(-(-length // HASH_LENGTH)))
    return mask[:length]


def _xor(left: bytes, right: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(left, right))


def encode(message: bytes, bits: int, salt: bytes) -> bytes:
    """EMSA-PSS-ENCODE (RFC 8017, 9.1.1) of ``message`` into ``bits`` bits with SHA-384 and this ``salt``."""
    length = -(-bits // 8)
    if length < HASH_LENGTH + len(salt) + 2:
        raise BlindSignatureError("the key is too short for SHA-384 with a 48-byte salt", "key")
    digest = hashlib.sha384(bytes(8) + hashlib.sha384(message).digest() + salt).digest()
    block = bytes(length - len(salt) - HASH_LENGTH - 2) + b"\x01" + salt
    masked = bytearray(_xor(block, _mgf1(digest, length - HASH_LENGTH - 1)))
    masked[0] &= 0xFF >> (8 * length - bits)
    return bytes(masked) + digest + b"\xbc"


def _decoded(message: bytes, encoded: bytes, bits: int) -> bool:
    """EMSA-PSS-VERIFY (RFC 8017, 9.1.2) with SHA-384 and a 48-byte salt: whether ``encoded`` encodes ``message``."""
    length = -(-bits // 8)
    if len(encoded) != length or length < HASH_LENGTH + SALT_LENGTH + 2 or encoded[-1] != 0xBC:
        return False
    masked, digest = encoded[:length - HASH_LENGTH - 1], encoded[length - HASH_LENGTH - 1:-1]
    unused = 8 * length - bits
    if masked[0] >> (8 - unused) if unused else 0:
        return False
    block = bytearray(_xor(masked, _mgf1(digest, len(masked))))
    block[0] &= 0xFF >> unused
    padding = length - HASH_LENGTH - SALT_LENGTH - 2
    if any(block[:padding]) or block[padding] != 1:
        return False
    salt = bytes(block[-SALT_LENGTH:])
    return secrets.compare_digest(hashlib.sha384(bytes(8) + hashlib.sha384(message).digest() + salt).digest(), digest)


def blind(key: PublicKey, message: bytes, salt: bytes | None = None, inverse: int | None = None) -> tuple[bytes, int]:
    """(the blinded message for the signer, the inverse that unblinds its answer), for the prepared ``message``.
    ``salt`` and ``inverse`` are drawn here (given only to reproduce a test vector); the inverse stays on the device
    with the message."""
    encoded = encode(message, key.n.bit_length() - 1, secrets.token_bytes(SALT_LENGTH) if salt is None else salt)
    m = int.from_bytes(encoded, "big")
    if math.gcd(m, key.n) != 1:
        raise BlindSignatureError("the message shares a factor with the modulus", "message")
    while inverse is None:
        r = secrets.randbelow(key.n - 1) + 1
        if math.gcd(r, key.n) == 1:
            inverse = pow(r, -1, key.n)
    r = pow(inverse, -1, key.n)
    return (m * pow(r, key.e, key.n) % key.n).to_bytes(key.length, "big"), inverse


def finalize(key: PublicKey, message: bytes, blind_signature: bytes, inverse: int) -> bytes:
    """The signature on the prepared ``message`` from the signer's ``blind_signature``: unblinded, then verified (a
    signer that answered with anything else is caught here, not when the response is refused)."""
    if len(blind_signature) != key.length:
        raise BlindSignatureError(f"a blind signature is {key.length} bytes, got {len(blind_signature)}", "blind_signature")
    signature = (int.from_bytes(blind_signature, "big") * inverse % key.n).to_bytes(key.length, "big")
    if not verify(key, message, signature):
        raise BlindSignatureError("the blind signature does not unblind to a valid signature", "blind_signature")
    return signature


def verify(key: PublicKey, message: bytes, signature: bytes) -> bool:
    """RSASSA-PSS-VERIFY (SHA-384, MGF1-SHA-384, 48-byte salt): whether ``signature`` is the key's on ``message``."""
    if len(signature) != key.length:
        return False
    s = int.from_bytes(signature, "big")
    if s >= key.n:
        return False
    bits = key.n.bit_length() - 1
    return _decoded(message, pow(s, key.e, key.n).to_bytes(-(-bits // 8), "big"), bits)
