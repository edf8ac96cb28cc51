"""Fixtures of tests/access: a real OpenID provider (tests/support/oidc_provider.py)."""

from tests.support.oidc_provider import make_oidc_provider, oidc_provider, oidc_runtime

__all__ = ["make_oidc_provider", "oidc_provider", "oidc_runtime"]
