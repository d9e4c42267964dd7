"""A contact form's post, end to end, in-process: p50/p95 of `POST /forms/<ID>` through Django's test Client
(the whole middleware stack, the view, the inbound service, the ticket, the acknowledgement queued), and the
page's GET.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/helpdesk_forms REDIS_URL=redis://127.0.0.1:6379/5 \\
        .venv/bin/python bench/forms.py --posts 200

Creates a fresh license and a form (one text question, one custom-field question) in that (migrated) database,
raises the form's rate limits for the run (one client address posts them all), and posts `--posts` times, each
with a token made 10 s before (the minimum age is part of the bot checks, not of the cost), every post a new
ticket. The machine's load decides the wall-clock times; the CPU ms per post (this process's thread) do
not. `--files 1` adds a 100 kB attachment to each post. Prints per-post milliseconds (p50, p95, max), SQL
statements and CPU per post, and the GET's p95. DEBUG=false as in production. Run by hand; results in bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "helpdesk.settings")
os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("SECRET_KEY", "bench-only-" + "x" * 50)
os.environ.setdefault("SECURE_SSL_REDIRECT", "false")  # as behind the proxy that terminates TLS
os.environ.setdefault("CONTACT_FORM_POSTS_PER_IP", "0")  # no limit for the run (one address posts them all)
os.environ.setdefault("CONTACT_FORM_POSTS_PER_FORM", "0")

import django  # noqa: E402

django.setup()

from django.core.files.uploadedfile import SimpleUploadedFile  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from accounts import services as account_services  # noqa: E402
from templates_app.contact_form_posts import form_token  # noqa: E402
from templates_app.contact_forms import contact_form_create  # noqa: E402
from tickets.custom_fields.services import custom_field_create  # noqa: E402
from tickets.models import Ticket  # noqa: E402


def _ms(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--posts", type=int, default=200)
    parser.add_argument("--files", type=int, default=0)
    args = parser.parse_args()
    stamp = int(time.time())
    license = account_services.license_create(
        owner_email=f"bench-forms-{stamp}@example.com",
        owner_name="Bench",
        company_name=f"Bench forms {stamp}",
    )
    custom_field_create(license=license, api_key="orderNumber", display_name="Order", type="singleLine")
    form = contact_form_create(
        license=license,
        name="Contact us",
        fields=[
            {"key": "phone", "label": "Phone", "type": "text", "required": False},
            {"key": "order", "label": "Order", "type": "customField", "customFieldKey": "orderNumber"},
        ],
    )
    client = Client(HTTP_USER_AGENT="bench/1.0", REMOTE_ADDR="203.0.113.7")
    url = f"/forms/{form.pk}"
    gets = []
    for _ in range(50):
        started = time.perf_counter()
        assert client.get(url).status_code == 200
        gets.append((time.perf_counter() - started) * 1000)
    posts, queries, cpu = [], [], []
    for i in range(args.posts):
        data = {
            "name": f"Customer {i}",
            "email": f"customer{i}@bench.example",
            "subject": f"Order {i} is late",
            "message": "Hello,\n\nmy order has not arrived yet. Could you look into it?\n\nThanks",
            "phone": "+33 1 23 45 67 89",
            "order": f"A-{i}",
            "formToken": form_token(form, now=time.time() - 10),
            "website": "",
        }
        if args.files:
            data["attachments"] = [
                SimpleUploadedFile(f"photo{n}.jpg", os.urandom(100_000), content_type="image/jpeg")
                for n in range(args.files)
            ]
        with CaptureQueriesContext(connection) as captured:
            started, cpu_started = time.perf_counter(), time.thread_time()
            response = client.post(url, data)
            posts.append((time.perf_counter() - started) * 1000)
            cpu.append((time.thread_time() - cpu_started) * 1000)
        assert response.status_code == 200, response.content[:500]
        queries.append(len(captured.captured_queries))
    made = Ticket.objects.filter(license=license).count()
    assert made == args.posts, made
    print(
        f"database: {connection.vendor} {connection.settings_dict['NAME']}; posts: {args.posts}, files {args.files}"
    )
    print(
        f"POST /forms/<ID>: p50 {_ms(posts, 50):.1f} ms, p95 {_ms(posts, 95):.1f} ms, max {max(posts):.1f} ms; "
        f"SQL statements per post: median {statistics.median(queries):.0f}; "
        f"CPU of this process per post: median {statistics.median(cpu):.1f} ms"
    )
    print(f"GET /forms/<ID>: p50 {_ms(gets, 50):.1f} ms, p95 {_ms(gets, 95):.1f} ms")


if __name__ == "__main__":
    main()
