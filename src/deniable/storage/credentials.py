"""Blind-signed credentials (RFC 9474): what the database keeps of them, and why nothing here joins an invitation to
its response.

Three tables, never joined to each other by anything a response carries:

- ``credential_keys``: one RSA key per survey, version, frame cell and wave (`Credentials.credential_key`), made by the
  server when its first credential is asked for; a new version gets new keys. The private half is kept as the
  database keeps the admin's secrets, and no export or copy for analysis carries it.
- ``credential_issues``: one row per invitation that received its credential (its token's slot) and the digest of the
  blinded message it was issued for, so the same page asking again is answered again (the same signature) and another
  device is refused. A blinded message is the serial times a random factor only the device knows: it says nothing of
  the serial, so neither does its digest.
- ``spent_serials``: the digest of each serial spent, written in its response's transaction, unique per survey, so a
  credential answers once. It is the only row a response's transaction writes beside the response.

Who received a credential and which serials were spent are both known; which serial belongs to which invitation is
not kept anywhere, not even for a moment, so no log, replica or backup has it to lose.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from deniable.client import blind_rsa

from .common import digest, today
from .errors import Conflict, Gone, Invalid, NotFound
from .part import Part
from .tokens import SLOTS_PER_ROW, is_spent, read_bitmaps

#: A serial as spent: the 32-byte prefix and the 32-byte serial of RSABSSA-SHA384-PSS-Randomized, in hex.
SERIAL_HEX = 2 * (blind_rsa.PREFIX_LENGTH + 32)


@dataclass(frozen=True)
class Credential:
    """A spent credential whose signature verified: the serial's digest, and the frame cell and wave its key binds."""

    serial_digest: str
    key_id: str
    cell: int | None
    wave: str | None


@dataclass(frozen=True)
class SigningKey:
    """A survey version's (and cell's, and wave's) key: its id (the digest of its public half), the public key, and
    the private key as PEM text (read by the server, which signs)."""

    id: str
    public: blind_rsa.PublicKey
    private_pem: str
    cell: int | None
    wave: str | None


_PUBLIC: dict = {}  # key id -> (public key, cell, wave): a key never changes once stored


class Credentials(Part):
    """The part of `Store` that keeps credential keys, issues and spent serials."""

    def credential_key(self, survey_id: str, spec_hash: str, cell: int | None, wave: str | None, make) -> SigningKey:
        """The key that signs this version's credentials in ``cell`` and ``wave``; ``make()`` gives (public key, private
        PEM) for a new one, stored unless another process stored one first (then that one is used)."""
        found = self._key(survey_id, spec_hash, cell, wave)
        if found is not None:
            return found
        public, private_pem = make()
        key_id = digest(f"{public.n:x}:{public.e:x}")[:32]
        with self.transaction():
            self.execute("INSERT INTO credential_keys (id, survey_id, spec_hash, frame_cell, wave, modulus, exponent, "
                         "private_key, created_on) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                         [key_id, survey_id, spec_hash, cell, wave, f"{public.n:x}", public.e, private_pem, today()])
        found = self._key(survey_id, spec_hash, cell, wave)
        assert found is not None  # stored now, or by the process that won the race
        return found

    def credential_key_for_token(self, survey_id: str, token: str, make) -> SigningKey:
        """The key that signs ``token``'s credential: its survey's current version, its frame cell, and the open wave
        of a repeated survey (`credential_key`; ``make`` as there). Gone for a closed survey, Invalid for a token not of
        this survey, Conflict for one spent already."""
        survey = self.store.surveys.row(survey_id)
        if survey is None:
            raise NotFound(f"no survey {survey_id!r}", "survey_id")
        if survey["closed_on"] is not None:
            raise Gone(f"survey {survey_id!r} is closed", "survey_id")
        row = self._unspent_token(survey_id, token)
        repeated = self.store.surveys.spec_of(survey["current_hash"]).repeated is not None
        wave = self.store.surveys.open_wave_label(survey_id) if repeated else None
        return self.credential_key(survey_id, survey["current_hash"], row["frame_cell"], wave, make)

    def _unspent_token(self, survey_id: str, token, lock: bool = False) -> dict:
        """The token's row (slot, frame cell); Invalid for a string that is not a token of this survey, Conflict for
        a token spent already (without a credential). ``lock``: its bitmap row held to the transaction's end, as a
        token spent without a credential holds it (`tokens.spend`), so the two never both pass."""
        row = self._one("SELECT slot, frame_cell FROM tokens WHERE token_hash = ? AND survey_id = ?",
                        [digest(token), survey_id]) if isinstance(token, str) and token else None
        if row is None:
            raise Invalid("token: not a token of this survey", "token")
        block = row["slot"] // SLOTS_PER_ROW
        bitmap = read_bitmaps(self.engine, survey_id, [block], lock=lock).get(block)
        if bitmap is not None and is_spent(bitmap, row["slot"]):
            raise Conflict("token: already used; each invitation answers once", "token")
        return row

    def _key(self, survey_id, spec_hash, cell, wave) -> SigningKey | None:
        row = self._one("SELECT id, modulus, exponent, private_key, frame_cell, wave FROM credential_keys "
                        "WHERE survey_id = ? AND spec_hash = ? AND COALESCE(frame_cell, -1) = ? AND COALESCE(wave, '') = ?",
                        [survey_id, spec_hash, -1 if cell is None else cell, wave or ""])
        if row is None:
            return None
        return SigningKey(row["id"], blind_rsa.PublicKey(int(row["modulus"], 16), int(row["exponent"])),
                          row["private_key"], row["frame_cell"], row["wave"])

    def public_key(self, survey_id: str, key_id: str) -> tuple[blind_rsa.PublicKey, int | None, str | None] | None:
        """(public key, cell, wave) of one of the survey's keys, any version's; None for any other id."""
        known = _PUBLIC.get((self.store.url, survey_id, key_id))
        if known is not None:
            return known
        row = self._one("SELECT modulus, exponent, frame_cell, wave FROM credential_keys WHERE id = ? AND survey_id = ?",
                        [key_id, survey_id])
        if row is None:
            return None
        known = (blind_rsa.PublicKey(int(row["modulus"], 16), int(row["exponent"])), row["frame_cell"], row["wave"])
        if len(_PUBLIC) < 4096:
            _PUBLIC[(self.store.url, survey_id, key_id)] = known
        return known

    def issue_credential(self, survey_id: str, token: str, blinded: str, reissue: bool = False) -> int | None:
        """Record that ``token``'s invitation receives its credential for this blinded message (hex; its digest is
        kept), and return the token's frame cell. The same message again is allowed (a retry: the signature is the same); another
        is refused unless an admin re-issues (``reissue``), and so is a token already spent without a credential."""
        blinded_digest = digest(blinded.lower())
        with self.transaction():
            row = self._unspent_token(survey_id, token, lock=True)
            slot = row["slot"]
            issued = self._one("SELECT blinded FROM credential_issues WHERE survey_id = ? AND slot = ?"
                               + self.engine.lock_rows("credential_issues"), [survey_id, slot])
            if issued is None:
                self.execute("INSERT INTO credential_issues (survey_id, slot, blinded) VALUES (?, ?, ?) "
                             "ON CONFLICT (survey_id, slot) DO NOTHING", [survey_id, slot, blinded_digest])
                if self._one("SELECT blinded FROM credential_issues WHERE survey_id = ? AND slot = ?",
                             [survey_id, slot])["blinded"] != blinded_digest:
                    raise Conflict("token: this invitation has received its credential already (on another device "
                                   "or page); an admin can issue it again", "token")
            elif issued["blinded"] != blinded_digest:
                if not reissue:
                    raise Conflict("token: this invitation has received its credential already (on another device "
                                   "or page); an admin can issue it again", "token")
                self.execute("UPDATE credential_issues SET blinded = ? WHERE survey_id = ? AND slot = ?",
                             [blinded_digest, survey_id, slot])
            return row["frame_cell"]

    def forget_credential(self, survey_id: str, token: str, actor: str | None = None) -> None:
        """Let ``token``'s invitation receive a new credential (an admin's re-issue, for a device lost before it
        answered: the old credential may still be spent once, and so may the new; the audit log says so). NotFound for
        a token with none."""
        with self.transaction():
            row = self._one("SELECT slot FROM tokens WHERE token_hash = ? AND survey_id = ?", [digest(token), survey_id])
            if row is None:
                raise NotFound("token: not a token of this survey", "token")
            deleted = self.execute("DELETE FROM credential_issues WHERE survey_id = ? AND slot = ? RETURNING slot",
                                   [survey_id, row["slot"]]).fetchone()
            if deleted is None:
                raise NotFound("token: this invitation has received no credential", "token")
            self.store.accounts.audit_if(actor, "credential re-issued", survey_id,
                                         "an invitation may now receive a second credential; if its first was not "
                                         "lost, this invitation can answer twice")

    def credentials_issued(self, survey_id: str) -> int:
        """How many invitations have received their credential (opened on a device; answered or not)."""
        return self._one("SELECT COUNT(*) AS n FROM credential_issues WHERE survey_id = ?", [survey_id])["n"]

    def for_response(self, survey_id: str, record, token, credential) -> Credential | None:
        """A response's ``credential`` verified (`checked`), or None without one; refused on a survey without
        invitations, and beside a token."""
        if credential is None:
            return None
        if record.access != "token":
            raise Invalid(f"credential: survey {survey_id!r} takes responses without invitations", "credential")
        if token is not None:
            raise Invalid("credential: send the credential or the token, not both", "credential")
        return self.checked(survey_id, credential)

    def spend(self, survey_id: str, credential: Credential, wave: str | None) -> None:
        """Mark the serial spent inside the caller's transaction (the response's, joining ``wave``); Conflict if it
        was, or if its key was for another wave."""
        if credential.wave is not None and credential.wave != wave:
            raise Conflict(f"credential: issued for wave {credential.wave!r}, and wave {wave!r} is open now",
                           "credential")
        spent = self.execute("INSERT INTO spent_serials (survey_id, serial) VALUES (?, ?) "
                             "ON CONFLICT (survey_id, serial) DO NOTHING RETURNING serial",
                             [survey_id, credential.serial_digest]).fetchone()
        if spent is None:
            raise Conflict("credential: already used; each invitation answers once", "credential")

    def checked(self, survey_id: str, credential) -> Credential:
        """A response's ``credential`` ({"key", "serial", "signature"}, hex) verified against the survey's key it
        names; Invalid naming the field otherwise. Nothing is written."""
        if not isinstance(credential, dict) or set(credential) != {"key", "serial", "signature"}:
            raise Invalid("credential: an object with key, serial and signature", "credential")
        key_id, serial, signature = credential["key"], credential["serial"], credential["signature"]
        if not all(isinstance(part, str) for part in (key_id, serial, signature)):
            raise Invalid("credential: key, serial and signature are hexadecimal strings", "credential")
        known = self.public_key(survey_id, key_id) if len(key_id) == 32 else None
        if known is None:
            raise Invalid("credential.key: not a key of this survey", "credential.key")
        public, cell, wave = known
        if len(serial) != SERIAL_HEX or not is_hex(serial):
            raise Invalid(f"credential.serial: {SERIAL_HEX} hexadecimal digits", "credential.serial")
        if len(signature) != 2 * public.length or not is_hex(signature):
            raise Invalid(f"credential.signature: {2 * public.length} hexadecimal digits", "credential.signature")
        if not _verify(public, bytes.fromhex(serial), bytes.fromhex(signature)):
            raise Invalid("credential.signature: does not verify with the survey's key", "credential.signature")
        return Credential(digest(serial.lower()), key_id, cell, wave)


def _verify(public: blind_rsa.PublicKey, message: bytes, signature: bytes) -> bool:
    """RSASSA-PSS verification (SHA-384, 48-byte salt): by `cryptography` (OpenSSL) where it is installed, as on every
    server install, 44 µs a signature; else by the client's own (`blind_rsa.verify`, the standard library's
    arithmetic), 259 µs, which a response's CPU felt (benchmarks/credentials.py). The two agree on every signature
    (tests/client/test_blind_rsa.py checks the client's against cryptography's)."""
    verifier = _openssl_key(public.n, public.e)
    if verifier is None:
        return blind_rsa.verify(public, message, signature)
    # cryptography is the server extra's: an install for analysis only reads databases without it
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    try:
        verifier.verify(signature, message, padding.PSS(mgf=padding.MGF1(hashes.SHA384()),
                                                        salt_length=blind_rsa.SALT_LENGTH), hashes.SHA384())
    except InvalidSignature:
        return False
    return True


@functools.lru_cache(maxsize=1024)
def _openssl_key(n: int, e: int):
    """The public key as `cryptography` holds it; None without `cryptography` (an install for analysis only)."""
    try:
        from cryptography.hazmat.primitives.asymmetric import rsa  # the server extra's, absent from analysis installs
    except ImportError:
        return None
    return rsa.RSAPublicNumbers(e, n).public_key()


def is_hex(text: str) -> bool:
    """Whether ``text`` is bytes in hexadecimal digits, nothing else (a credential's parts, a blinded message)."""
    return len(text) % 2 == 0 and all(c in "0123456789abcdefABCDEF" for c in text)
