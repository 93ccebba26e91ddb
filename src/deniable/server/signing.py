"""The server's side of blind-signed credentials (RFC 9474, RSABSSA-SHA384-PSS-Randomized): keys made and read with
`cryptography`, the blind signature computed on them.

Why `cryptography`: it makes RSA keys from the operating system's randomness with OpenSSL's prime generation and
writes and reads them as PKCS #8, which is the part of RSA a project should not write itself. It offers no raw RSA
private operation (a blind signature is one: the blinded message is signed as it comes, with no padding, since the
padding was applied by the respondent's device before blinding), so the signature is RFC 8017's RSASP1 on the key's
own numbers, by the Chinese remainder theorem, and checked with the public exponent before it is returned (RFC 9474,
4.3: a fault in the computation would otherwise leak the key).
"""

from __future__ import annotations

import functools

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from deniable.client import blind_rsa
from deniable.client.blind_rsa import BlindSignatureError

#: The modulus of every new key: 2048 bits, RFC 9474's least, which a phone blinds and unblinds in milliseconds.
KEY_BITS = 2048


def new_key() -> tuple[blind_rsa.PublicKey, str]:
    """A new signing key: (its public key, its private key as unencrypted PKCS #8 PEM)."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
    numbers = private.public_key().public_numbers()
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return blind_rsa.PublicKey(numbers.n, numbers.e), pem


@functools.lru_cache(maxsize=256)
def _numbers(private_pem: str) -> rsa.RSAPrivateNumbers:
    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    assert isinstance(key, rsa.RSAPrivateKey)  # only RSA keys are ever stored
    return key.private_numbers()


def blind_sign(private_pem: str, blinded: bytes) -> bytes:
    """RFC 9474's BlindSign: the signature of a blinded message, as many bytes as the modulus. BlindSignatureError
    (field ``blinded``) for a message of the wrong length or not below the modulus."""
    numbers = _numbers(private_pem)
    public = numbers.public_numbers
    length = (public.n.bit_length() + 7) // 8
    if len(blinded) != length:
        raise BlindSignatureError(f"blinded: {length} bytes ({2 * length} hexadecimal digits), got {len(blinded)}",
                                  "blinded")
    message = int.from_bytes(blinded, "big")
    if message >= public.n:
        raise BlindSignatureError("blinded: not a message this key signs (it is not below the modulus)", "blinded")
    first = pow(message, numbers.dmp1, numbers.p)
    second = pow(message, numbers.dmq1, numbers.q)
    signature = second + numbers.q * ((numbers.iqmp * (first - second)) % numbers.p)
    if pow(signature, public.e, public.n) != message:  # pragma: no cover - a fault in the arithmetic
        raise BlindSignatureError("blinded: the signature failed its own check; nothing was returned", "blinded")
    return signature.to_bytes(length, "big")
