"""Is a Jupyter password in Helm values a well-known one?

Jupyter server stores a password as ``argon2:<encoded hash>`` or ``<algorithm>:<salt>:<hex
digest>`` (``hashlib.new(algorithm)`` over ``password + salt``); the dask chart's default
is the sha1 form of ``dask`` and the paper's scripts use ``rapidsai``. A hash is checked by
verifying it against those passwords, the way Jupyter itself checks a login.
"""
from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any, Literal

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

# The dask chart's ``jupyter.password`` default: sha1 of "dask" with salt aae8550c0a44.
CHART_DEFAULT_HASH = "sha1:aae8550c0a44:9507d45e087d5ee481a5ce9f4f16f37a0867318c"
WELL_KNOWN = ("dask", "rapidsai", "")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_SALTED_ALGORITHMS = {a for a in hashlib.algorithms_guaranteed if not a.startswith("shake_")}


def _shown(password: str) -> str:
    return f"the password {password!r}" if password else "an empty password"


def _argon2_match(encoded: str) -> str | Literal[False] | None:
    """The well-known password ``encoded`` verifies against, None if none, False if it
    is not an argon2 hash at all."""
    hasher = PasswordHasher()
    for password in WELL_KNOWN:
        try:
            if hasher.verify(encoded, password):
                return password
        except InvalidHashError:
            return False
        except VerificationError:
            continue
    return None


def _salted_match(algorithm: str, salt: str, digest: str) -> str | None:
    for password in WELL_KNOWN:
        h = hashlib.new(algorithm)
        h.update(password.encode("utf-8") + salt.encode("ascii", "replace"))
        if hmac.compare_digest(h.hexdigest(), digest.lower()):
            return password
    return None


def password_problem(value: Any) -> str | None:
    """What is wrong with ``jupyter.password``, or None if it is a hash of something else.
    Never echoes the value: it is a secret."""
    if value is None or value == "":
        return "sets no password, so the chart's default applies (a hash of the password 'dask')"
    if not isinstance(value, str):
        return "is not a string"
    if value == CHART_DEFAULT_HASH:
        return "is the dask chart's default hash (the password 'dask')"
    if value.startswith("argon2:"):
        match = _argon2_match(value.removeprefix("argon2:"))
        if match is False:
            return "starts with 'argon2:' but is not an argon2 hash Jupyter can verify"
        return None if match is None else f"is an argon2 hash of {_shown(match)}"
    parts = value.split(":", 2)
    if len(parts) == 3 and parts[0] in _SALTED_ALGORITHMS and _HEX.match(parts[2]):
        match = _salted_match(*parts)
        return None if match is None else f"is a {parts[0]} hash of {_shown(match)}"
    return ("is not a Jupyter password hash ('argon2:...' or 'sha1:<salt>:<hash>'): a plain-text password "
            "sits readable in the release values, and Jupyter cannot verify it")
