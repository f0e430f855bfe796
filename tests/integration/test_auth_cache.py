"""The API process trusts a key that authenticated for `auth_cache_seconds`, and no longer (real PostgreSQL):
a key revoked in the database stops working once that time is over; a key the database does not know is
never remembered, so creating it afterwards lets it in at once."""

from __future__ import annotations

import time

import psycopg
import pytest

from services.common.auth import Principal
from services.common.errors import Unauthenticated
from services.common.settings import Settings
from services.gateway.keys import ApiKeyService, hash_key
from tests.conftest import _with_db
from tests.integration.governed import GovernedServices

pytestmark = pytest.mark.integration
BOOTSTRAP = Principal(key_id=None, tenant=None, project=None, role="admin", bootstrap=True)


def revoke(settings: Settings, svc: GovernedServices, key: str) -> None:
    owner = _with_db(settings.owner_database_url, svc.db.url.rsplit("/", 1)[1])
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("UPDATE api_keys SET revoked_at = now() WHERE key_hash = %s", (hash_key(key),))


def test_a_revoked_key_works_until_the_cache_time_is_over(svc: GovernedServices, settings: Settings) -> None:
    keys = ApiKeyService(svc.db, "", cache_seconds=0.5)
    key = keys.create(BOOTSTRAP, "auth-t", None, "agent").key
    assert keys.known(key) is None  # not asked yet: the database must be
    assert keys.authenticate(key).tenant == "auth-t"
    revoke(settings, svc, key)
    assert keys.known(key) is not None and keys.authenticate(key).tenant == "auth-t"  # within the time
    time.sleep(0.6)
    assert keys.known(key) is None
    with pytest.raises(Unauthenticated):
        keys.authenticate(key)


def test_without_a_cache_time_every_request_asks_the_database(svc: GovernedServices, settings: Settings) -> None:
    keys = ApiKeyService(svc.db, "", cache_seconds=0)
    key = keys.create(BOOTSTRAP, "auth-t", None, "agent").key
    assert keys.authenticate(key).tenant == "auth-t" and keys.known(key) is None
    revoke(settings, svc, key)
    with pytest.raises(Unauthenticated):
        keys.authenticate(key)


def test_an_unknown_key_is_not_remembered(svc: GovernedServices) -> None:
    keys = ApiKeyService(svc.db, "", cache_seconds=60)
    with pytest.raises(Unauthenticated):
        keys.authenticate("olk_not-issued-yet")
    assert keys.known("olk_not-issued-yet") is None
    with pytest.raises(Unauthenticated, match="malformed"):
        keys.known("olk_\u00e9")
