"""The inbound addresses: a license's, a team's, and a ticket's signed reply address."""

from templates_app.addresses import (
    InboundAddress,
    license_address,
    parse_inbound_address,
    reply_address,
    team_address,
)


def test_it_parses_the_three_forms(settings):
    settings.HELPDESK_INBOUND_DOMAIN = "example.net"
    team_id = "3f2a9c1e-0000-4000-8000-000000000000"
    assert license_address(42) == "42@inbound.example.net"
    assert parse_inbound_address(license_address(42)) == InboundAddress(42)
    assert parse_inbound_address(team_address(42, team_id)) == InboundAddress(42, team_prefix="3f2a9c1e")
    assert parse_inbound_address(reply_address(42, "117")) == InboundAddress(42, short_id="117")
    assert parse_inbound_address("<42@INBOUND.example.net>") == InboundAddress(42)


def test_a_forged_or_foreign_address_is_refused(settings):
    settings.HELPDESK_INBOUND_DOMAIN = "example.net"
    genuine = reply_address(42, "117")
    assert parse_inbound_address(genuine.replace("t117.", "t118.")) is None  # signature of another ticket
    assert parse_inbound_address(genuine.replace("42+", "43+")) is None  # another license
    assert parse_inbound_address("42@inbound.example.org") is None
    assert parse_inbound_address("support@acme.com") is None
    assert parse_inbound_address("x42@inbound.example.net") is None
