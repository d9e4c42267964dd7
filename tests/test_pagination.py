"""Keyset pagination: cursor walks over equal timestamps, page numbers, headers, Link URLs, 400s, query counts."""

import datetime
import json
import math
import re
from urllib.parse import urlsplit

import pytest
from django.test import RequestFactory
from rest_framework import generics
from rest_framework.permissions import AllowAny
from rest_framework.test import APIRequestFactory

from accounts.models import Team
from helpdesk.api.pagination import PAGINATION_PARAMS, KeysetPagination
from helpdesk.api.renderers import JSONRenderer, iso

T0 = datetime.datetime(2026, 4, 15, 12, 0, tzinfo=datetime.UTC)


class TeamList(generics.ListAPIView):
    authentication_classes = []
    permission_classes = [AllowAny]
    renderer_classes = [JSONRenderer]
    pagination_class = KeysetPagination
    sort_fields = {"createdAt": "created_at", "updatedAt": "updated_at"}
    queryset = Team.objects.all()

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response([str(team.id) for team in page])


def get(url_or_params):
    if isinstance(url_or_params, str):
        parts = urlsplit(url_or_params)
        request = APIRequestFactory().get(f"{parts.path}?{parts.query}")
    else:
        request = APIRequestFactory().get("/teams", url_or_params)
    response = TeamList.as_view()(request)
    response.render()
    response.body = json.loads(response.content)
    return response


def links(response) -> dict[str, str]:
    return {rel: url for url, rel in re.findall(r'<([^>]+)>; rel="(\w+)"', response.get("Link", ""))}


@pytest.fixture
def teams(license):
    """31 teams (the default one plus 30) on 4 timestamps; 10 share T0 exactly, 6 differ by microseconds only."""
    Team.objects.filter(license=license).update(created_at=T0, updated_at=T0)
    stamps = [T0] * 9 + [T0 + datetime.timedelta(microseconds=n * 100) for n in range(1, 7)]
    stamps += [T0 - datetime.timedelta(hours=1)] * 8 + [T0 + datetime.timedelta(days=1)] * 7
    # in one INSERT: the rows TeamFactory would make, without its saves' audit entries (measured 2026-11-26: 30
    # saves were ~0.28 s of CPU a test on PostgreSQL; the file on SQLite 11.4 -> 2.4 s)
    Team.objects.bulk_create(
        Team(
            license=license,
            name=f"Team {n}",
            created_at=stamp,
            updated_at=T0 + datetime.timedelta(minutes=n % 3),
        )
        for n, stamp in enumerate(stamps)
    )
    return Team.objects.filter(license=license)


def expected(teams, order="desc", field="created_at"):
    rows = sorted(teams.values_list(field, "id"), reverse=order == "desc")
    return [str(pk) for _, pk in rows]


def walk(first, rel):
    response, seen, pages = get(first), [], 0
    while True:
        assert response.status_code == 200, response.body
        seen += response.body
        pages += 1
        if rel not in links(response):
            return seen, pages
        response = get(links(response)[rel])
        assert pages < 50


# --- walks ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["desc", "asc"])
@pytest.mark.parametrize("page_size", [1, 4, 10, 31, 100])
def test_a_forward_walk_returns_every_row_once_in_order(teams, order, page_size):
    # when
    seen, pages = walk({"order": order, "pageSize": page_size}, "next")

    # then
    assert seen == expected(teams, order)
    assert pages == math.ceil(31 / page_size)


@pytest.mark.parametrize("order", ["desc", "asc"])
@pytest.mark.parametrize("page_size", [1, 4, 7])
def test_a_backward_walk_returns_every_row_once_in_order(teams, order, page_size):
    # given the last page, reached by page number
    last_page = math.ceil(31 / page_size)

    # when
    response, seen = get({"order": order, "pageSize": page_size, "page": last_page}), []
    while True:
        seen = response.body + seen
        if "prev" not in links(response):
            break
        response = get(links(response)["prev"])

    # then
    assert seen == expected(teams, order)


def test_a_walk_by_another_sort_field(teams):
    # when
    seen, _ = walk({"sortBy": "updatedAt", "order": "asc", "pageSize": 3}, "next")

    # then
    assert seen == expected(teams, "asc", "updated_at")


def test_a_cursor_built_from_the_rendered_millisecond_timestamp_is_exact(teams):
    # given the client holds a page ending inside the microsecond-distinct group and copies its createdAt
    order = expected(teams)
    by_id = {str(team.id): team for team in teams}
    for cut in range(1, 30):
        last = by_id[order[cut - 1]]

        # when
        response = get({"next.value": iso(last.created_at), "next.ID": str(last.id), "pageSize": 100})

        # then exactly the rest, no repeats, no skips
        assert response.body == order[cut:], cut


def test_a_prev_cursor_built_from_the_rendered_millisecond_timestamp_is_exact(teams):
    order = expected(teams, "asc")
    by_id = {str(team.id): team for team in teams}
    for cut in range(1, 30):
        first = by_id[order[cut]]
        response = get(
            {"order": "asc", "prev.value": iso(first.created_at), "prev.ID": str(first.id), "pageSize": 100}
        )
        assert response.body == order[:cut], cut


def test_a_cursor_of_a_deleted_item_still_works(teams):
    # given the last item of page 1 is deleted before the client asks for page 2
    order = expected(teams)
    page = get({"pageSize": 5})
    Team.objects.filter(id=page.body[-1]).delete()

    # when
    response = get(links(page)["next"])

    # then
    assert response.body == order[5:10]


# --- page numbers and headers --------------------------------------------------------------------------------


def test_page_numbers(teams):
    # when
    response = get({"page": 3, "pageSize": 5})

    # then
    assert response.status_code == 200
    assert response.body == expected(teams)[10:15]
    assert response["X-Total-Results"] == "31"
    assert response["X-Total-Pages"] == "7"


def test_the_defaults_are_page_1_of_20_newest_first(teams):
    # when
    response = get({})

    # then
    assert response.body == expected(teams)[:20]
    assert response["X-Total-Results"] == "31"
    assert response["X-Total-Pages"] == "2"
    assert set(links(response)) == {"next"}


def test_the_last_page_has_no_next_link_and_the_first_no_prev(teams):
    # when
    first, last = get({"pageSize": 10}), get({"pageSize": 10, "page": 4})

    # then
    assert set(links(first)) == {"next"}
    assert last.body == expected(teams)[30:]
    assert set(links(last)) == {"prev"}


def test_a_page_past_the_end_is_empty_without_links(teams):
    # when
    response = get({"page": 9, "pageSize": 10})

    # then
    assert response.status_code == 200
    assert response.body == []
    assert response["X-Total-Results"] == "31"
    assert response["X-Total-Pages"] == "4"
    assert "Link" not in response


def test_an_empty_set(teams):
    # given
    paginator = KeysetPagination()

    # when
    items = paginator.paginate_queryset(teams.filter(name="nobody"), RequestFactory().get("/teams"))

    # then
    assert items == []
    assert paginator.headers == {"X-Total-Results": "0", "X-Total-Pages": "0"}


def test_cursor_requests_report_the_whole_filtered_set(teams):
    # when
    page = get({"pageSize": 4})
    second = get(links(page)["next"])
    back = get(links(second)["prev"])

    # then
    for response in (second, back):
        assert response["X-Total-Results"] == "31"
        assert response["X-Total-Pages"] == "8"
    assert back.body == page.body
    assert second.body == expected(teams)[4:8]


def test_link_urls_keep_the_other_parameters_and_drop_page(teams):
    # when
    response = get(
        {"page": 2, "pageSize": 3, "order": "asc", "sortBy": "updatedAt", "q": "a b", "tag[]": ["x", "y"]}
    )

    # then
    rows = sorted(teams.values_list("updated_at", "id"))
    first, last = rows[3], rows[5]
    next_url, prev_url = links(response)["next"], links(response)["prev"]
    assert next_url.startswith("http://testserver/teams?")
    assert "page=" not in next_url.replace("pageSize=", "")
    for url in (next_url, prev_url):
        assert "pageSize=3" in url and "order=asc" in url and "sortBy=updatedAt" in url
        assert "q=a+b" in url and "tag%5B%5D=x&tag%5B%5D=y" in url
    assert f"next.ID={last[1]}" in next_url
    assert f"next.value={last[0].strftime('%Y-%m-%dT%H:%M:%S.%f')}Z".replace(":", "%3A") in next_url
    assert f"prev.ID={first[1]}" in prev_url
    assert "next." not in prev_url


@pytest.mark.parametrize(
    ("extra", "origin"),
    [
        ({}, "http://testserver"),
        ({"HTTP_HOST": "localhost:8000"}, "http://localhost:8000"),
        ({"secure": True}, "https://testserver"),
        ({"HTTP_HOST": "127.0.0.1", "secure": True}, "https://127.0.0.1"),
    ],
)
def test_link_urls_follow_each_requests_scheme_and_host(teams, extra, origin):
    # given the absolute URL remembered per process by an earlier request to another host or scheme
    get({"pageSize": 3})

    # when
    request = APIRequestFactory().get("/teams", {"pageSize": 3}, **extra)
    response = TeamList.as_view()(request)

    # then
    assert links(response)["next"].startswith(f"{origin}/teams?pageSize=3&next.value=")


class _ReadsRecorded(dict):
    """A request's META that records which keys are read."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)


@pytest.mark.parametrize("forwarded", [False, True])
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"HTTP_HOST": "localhost:8000"},
        {"HTTP_X_FORWARDED_HOST": "localhost", "HTTP_X_FORWARDED_PORT": "8443"},
        {"secure": True},
    ],
)
def test_get_host_reads_no_more_of_the_request_than_the_link_urls_remember(settings, forwarded, headers):
    # The Link URLs' absolute URL is remembered per scheme, path and _HOST_META (helpdesk.api.pagination): this
    # fails when Django's get_host() reads anything else of the request.
    from helpdesk.api.pagination import _HOST_META

    # given
    settings.USE_X_FORWARDED_HOST = settings.USE_X_FORWARDED_PORT = forwarded
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    request = RequestFactory().get("/teams", **headers)
    request.META = _ReadsRecorded(request.META)
    request.scheme  # noqa: B018 (the key holds the scheme: what it reads is covered)
    scheme_reads, request.META.read = request.META.read, set()

    # when
    host = request.get_host()
    request.build_absolute_uri(request.path)

    # then
    assert host
    assert request.META.read <= {*_HOST_META, *scheme_reads}


# --- 400s ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"pageSize": 101}, "pageSize"),
        ({"pageSize": 0}, "pageSize"),
        ({"pageSize": "ten"}, "pageSize"),
        ({"pageSize": ""}, "pageSize"),
        ({"page": 0}, "page"),
        ({"page": "x"}, "page"),
        ({"page": "99999999999999999999"}, "page"),
        ({"order": "up"}, "order"),
        ({"sortBy": "lastMessageAt"}, "sortBy"),
        ({"sortBy": "created_at"}, "sortBy"),
        ({"next.value": "2026-04-15T12:00:00Z"}, "next.ID"),
        ({"next.ID": "8d2c1d1e-0a43-4d5b-9f1e-3f1f8f0d9a11"}, "next.value"),
        ({"prev.value": "2026-04-15T12:00:00Z"}, "prev.ID"),
        ({"next.value": "yesterday", "next.ID": "8d2c1d1e-0a43-4d5b-9f1e-3f1f8f0d9a11"}, "next.value"),
        (
            {"next.value": "2026-02-30T00:00:00Z", "next.ID": "8d2c1d1e-0a43-4d5b-9f1e-3f1f8f0d9a11"},
            "next.value",
        ),
        ({"next.value": "2026-04-15T12:00:00Z", "next.ID": "not-a-uuid"}, "next.ID"),
        ({"prev.value": "2026-04-15T12:00:00Z", "prev.ID": "123"}, "prev.ID"),
        ({"next.value": "", "next.ID": "8d2c1d1e-0a43-4d5b-9f1e-3f1f8f0d9a11"}, "next.value"),
        (
            {
                "next.value": "2026-04-15T12:00:00Z",
                "next.ID": "8d2c1d1e-0a43-4d5b-9f1e-3f1f8f0d9a11",
                "prev.value": "2026-04-15T12:00:00Z",
                "prev.ID": "8d2c1d1e-0a43-4d5b-9f1e-3f1f8f0d9a11",
            },
            "prev.value",
        ),
        (
            {"next.value": "2026-04-15T12:00:00Z", "prev.ID": "8d2c1d1e-0a43-4d5b-9f1e-3f1f8f0d9a11"},
            "prev.ID",
        ),
        (
            {
                "page": 2,
                "next.value": "2026-04-15T12:00:00Z",
                "next.ID": "8d2c1d1e-0a43-4d5b-9f1e-3f1f8f0d9a11",
            },
            "page",
        ),
    ],
)
def test_an_invalid_parameter_is_a_400_naming_it(teams, params, name):
    # when
    response = get(params)

    # then
    assert response.status_code == 400
    assert response.body["code"] == "invalid"
    assert list(response.body["details"]) == [name]
    assert name in response.body["error"]


def test_page_1_is_tolerated_with_a_cursor(teams):
    # given
    page = get({"pageSize": 5})
    url = links(page)["next"] + "&page=1"

    # when
    response = get(url)

    # then
    assert response.status_code == 200
    assert response.body == expected(teams)[5:10]


# --- queries -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("page_size", [1, 100])
def test_two_queries_whatever_the_page_size(teams, django_assert_num_queries, page_size):
    # given
    cursor = get({"pageSize": 5})
    prev_url = links(get(links(cursor)["next"]))["prev"]

    # when / then offset page, next cursor, prev cursor, millisecond cursor: one count, one page
    with django_assert_num_queries(2):
        get({"pageSize": page_size, "page": 2})
    with django_assert_num_queries(2):
        get(links(cursor)["next"].replace("pageSize=5", f"pageSize={page_size}"))
    with django_assert_num_queries(2):
        get(prev_url.replace("pageSize=5", f"pageSize={page_size}"))
    last = teams.get(id=cursor.body[-1])
    with django_assert_num_queries(2):
        get({"pageSize": page_size, "next.value": iso(last.created_at), "next.ID": str(last.id)})


# --- hooks and direct use ------------------------------------------------------------------------------------


class CachedCount(KeysetPagination):
    def get_count(self, queryset):
        return 1234


def test_a_subclass_can_serve_the_count(teams, django_assert_num_queries):
    # given a plain Django request and a direct call
    request = RequestFactory().get("/anything", {"pageSize": 7})
    paginator = CachedCount(sort_fields={"createdAt": "created_at"})

    # when
    with django_assert_num_queries(1):
        items = paginator.paginate_queryset(teams, request)

    # then
    assert [str(team.id) for team in items] == expected(teams)[:7]
    assert paginator.headers["X-Total-Results"] == "1234"
    assert paginator.headers["X-Total-Pages"] == "177"
    assert links(paginator.headers)["next"].startswith("http://testserver/anything?pageSize=7&next.value=")


def test_it_paginates_values_dicts(teams):
    # given
    request = RequestFactory().get("/teams", {"pageSize": 4, "order": "asc"})
    paginator = KeysetPagination()

    # when
    rows = paginator.paginate_queryset(teams.values("id", "name", "created_at"), request)

    # then
    assert [str(row["id"]) for row in rows] == expected(teams, "asc")[:4]
    assert f"next.ID={rows[-1]['id']}" in paginator.headers["Link"]


def test_the_parameter_names_are_exported():
    assert PAGINATION_PARAMS == (
        "page",
        "pageSize",
        "order",
        "sortBy",
        "next.value",
        "next.ID",
        "prev.value",
        "prev.ID",
    )


# --- SQL shape -----------------------------------------------------------------------------------------------


@pytest.mark.postgres
def test_the_cursor_is_one_row_value_comparison_on_postgres(teams):
    # given
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    page = get({"pageSize": 5})

    # when
    with CaptureQueriesContext(connection) as queries:
        get(links(page)["next"])

    # then the planner can serve it as an index range scan on (license, created_at, id)
    page_sql = next(query["sql"] for query in queries if "LIMIT" in query["sql"])
    assert '("accounts_team"."created_at", "accounts_team"."id") < (' in page_sql


def test_backends_without_row_values_get_the_equivalent_or_form(teams, monkeypatch):
    # given
    from django.db import connection

    monkeypatch.setattr(connection.features, "supports_tuple_lookups", False)

    # when
    desc, _ = walk({"pageSize": 4}, "next")
    asc, _ = walk({"pageSize": 4, "order": "asc"}, "next")

    # then
    assert desc == expected(teams)
    assert asc == expected(teams, "asc")


# --- a license-scoped viewset, as the tickets and audit log use it --------------------------------------------


def test_it_paginates_a_license_scoped_viewset_list(teams, owner, outsider):
    # given a GenericViewSet list action under the real authentication and tenancy
    from helpdesk.api.tenancy import LicenseScopedViewSet

    class TeamViewSet(LicenseScopedViewSet):
        queryset = Team.objects.all()
        pagination_class = KeysetPagination
        sort_fields = {"createdAt": "created_at"}
        renderer_classes = [JSONRenderer]

        def list(self, request):
            page = self.paginate_queryset(self.get_queryset())
            return self.get_paginated_response(
                [{"ID": str(team.id), "createdAt": iso(team.created_at)} for team in page]
            )

    view = TeamViewSet.as_view({"get": "list"})
    auth = owner.client._credentials

    # when the owner walks with pageSize 10
    seen, response = [], view(APIRequestFactory().get("/v1/teams", {"pageSize": 10}, **auth))
    while True:
        response.render()
        assert response.status_code == 200
        seen += [row["ID"] for row in json.loads(response.content)]
        if "next" not in links(response):
            break
        parts = urlsplit(links(response)["next"])
        response = view(APIRequestFactory().get(f"{parts.path}?{parts.query}", **auth))

    # then every team of the owner's license once, none of the outsider's
    assert seen == expected(teams)
    assert response["X-Total-Results"] == "31"
