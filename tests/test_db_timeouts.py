"""A PostgreSQL partition or a runaway statement ends in seconds: keepalives, tcp_user_timeout and a statement
timeout are on every connection, and a statement over the timeout is an OperationalError (the API's 503)."""

import pytest
from django.db import OperationalError, connection

from helpdesk.api.errors import DATABASE_ERRORS

pytestmark = pytest.mark.postgres


def test_every_connection_has_keepalives_a_tcp_user_timeout_and_a_statement_timeout(db):
    connection.ensure_connection()
    parameters = connection.connection.info.get_parameters()
    assert parameters["keepalives"] == "1"
    assert parameters["tcp_user_timeout"] == "5000"
    assert parameters["connect_timeout"] == "3"
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "30s"


def test_a_statement_over_the_timeout_is_cancelled_as_a_database_error(db):
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL statement_timeout = 100")
        with pytest.raises(OperationalError) as raised:
            cursor.execute("SELECT pg_sleep(5)")
    assert isinstance(raised.value, DATABASE_ERRORS)  # what the API answers with 503 database_unavailable
    assert "statement timeout" in str(raised.value)
