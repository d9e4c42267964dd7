"""Personal access tokens: how they are stored (a hash) and the scope every token needs to authenticate.

The API's authentication (accounts.api.authentication) checks tokens with these; accounts.services issues them.
"""

from __future__ import annotations

import hashlib

MIN_SCOPE = "accounts--my:ro"  # the least a token needs to authenticate (contract: Authentication)


def hash_token(token: str) -> str:
    """What the database keeps of a token: its SHA-256 (tokens are random, ≥ 160 bits: no salt needed)."""
    return hashlib.sha256(token.encode()).hexdigest()
