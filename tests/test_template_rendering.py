"""The renderer: every placeholder, both template types, appearance colors, missing values, sanitizing."""

import socket

import pytest

from templates_app.rendering import PLACEHOLDERS, VISUAL_COLORS, render, sanitize

CONTEXT = {
    "ticket.subject": "Broken <blender>",
    "ticket.shortID": "XY12",
    "requester.name": "Ann & Co",
    "requester.email": "ann@example.com",
    "message.text": "Line one\nLine two",
    "agent.name": "Bob Agent",
    "agent.signature": "Bob, support lead",
    "license.companyName": "Acme",
}
ALL_PLACEHOLDERS = " ".join("{{" + name + "}}" for name in PLACEHOLDERS)


def test_every_placeholder_is_replaced_in_both_parts_of_an_html_template():
    # given a template naming every placeholder in its text and its HTML
    content = {"text": ALL_PLACEHOLDERS, "html": f"<p>{ALL_PLACEHOLDERS}</p>", "appearance": {}}
    # when it is rendered
    rendered = render(type="html", content=content, context=CONTEXT)
    # then the text carries the raw values and the HTML the escaped values
    for value in CONTEXT.values():
        assert value in rendered.text
    assert "Broken &lt;blender&gt;" in rendered.html
    assert "Ann &amp; Co" in rendered.html
    assert "<blender>" not in rendered.html
    for name in ("XY12", "ann@example.com", "Bob Agent", "Bob, support lead", "Acme"):
        assert name in rendered.html
    assert "{{" not in rendered.text + rendered.html


def test_placeholders_allow_spaces_inside_the_braces():
    rendered = render(type="html", content={"text": "Hi {{ requester.name }}", "html": ""}, context=CONTEXT)
    assert rendered.text == "Hi Ann & Co"


def test_a_visual_template_builds_html_from_the_text_and_the_appearance_colors():
    # given a visual template with two chosen colors and one null
    content = {
        "text": "Hello {{requester.name}},\n\n{{message.text}}\n\nSee https://example.com/help?a=1&b=2",
        "html": "<p>ignored for visual templates</p>",
        "appearance": {
            "backgroundColor": {"type": "color", "value": "#112233"},
            "linkColor": {"type": "color", "value": "#AABBCC"},
            "textColor": {"type": "color", "value": None},
        },
    }
    # when it is rendered
    rendered = render(type="visual", content=content, context=CONTEXT)
    # then the HTML is built from the escaped text, in paragraphs, with the colors (null -> default)
    assert "ignored" not in rendered.html
    assert "<p>Hello Ann &amp; Co,</p>" in rendered.html
    assert "<p>Line one<br>Line two</p>" in rendered.html
    assert "background-color:#112233" in rendered.html
    assert f"color:{VISUAL_COLORS['textColor']}" in rendered.html
    assert '<a href="https://example.com/help?a=1&amp;b=2" style="color:#aabbcc">' in rendered.html
    assert rendered.text.startswith("Hello Ann & Co,\n\nLine one\nLine two")


def test_missing_values_render_empty_and_leave_no_gaps():
    # given a context without the agent and the ticket
    content = {
        "text": "{{message.text}}\n\n{{agent.name}}\n{{agent.signature}}\n\n{{license.companyName}}",
        "html": "",
    }
    # when it is rendered
    rendered = render(
        type="visual", content=content, context={"message.text": "Hi", "license.companyName": "Acme"}
    )
    # then the missing values are empty and the blank lines collapse
    assert rendered.text == "Hi\n\nAcme"
    assert "None" not in rendered.html


def test_an_unknown_placeholder_renders_empty_and_reaches_nothing():
    # given placeholders that try to reach beyond the context
    content = {
        "text": "{{settings.SECRET_KEY}}{{ticket.__class__}}{{license}}",
        "html": "<p>{{request.user}}</p>",
    }
    # when rendered with a context that even holds such a key
    rendered = render(type="html", content=content, context=CONTEXT | {"settings.SECRET_KEY": "s3cret"})
    # then nothing is substituted
    assert rendered.text == ""
    assert "s3cret" not in rendered.html and "request" not in rendered.html


def test_django_and_jinja_syntax_is_plain_text():
    content = {"text": "{% load static %}{{ 7*7 }}{{ ticket.subject|upper }}", "html": ""}
    rendered = render(type="html", content=content, context=CONTEXT)
    assert "49" not in rendered.text
    assert "{% load static %}" in rendered.text


def test_the_powered_by_footer_appears_only_when_asked():
    content = {"text": "Hi", "html": "<p>Hi</p>"}
    with_footer = render(type="html", content=content, context={}, powered_by=True)
    without = render(type="html", content=content, context={}, powered_by=False)
    assert "Powered by HelpDesk" in with_footer.text and "Powered by HelpDesk" in with_footer.html
    assert "Powered by" not in without.text + without.html
    visual = render(type="visual", content=content, context={}, powered_by=True)
    assert "Powered by HelpDesk" in visual.html


def test_an_html_template_without_html_falls_back_to_the_visual_layout():
    rendered = render(
        type="html", content={"text": "Hello {{requester.name}}", "html": "  "}, context=CONTEXT
    )
    assert "<p>Hello Ann &amp; Co</p>" in rendered.html


HOSTILE = [
    ("<script>alert(1)</script>Hello", ["<script", "alert"]),
    ('<img src="cid:logo" onerror="alert(1)">', ["onerror", "alert"]),
    ('<a href="javascript:alert(1)">x</a>', ["javascript:"]),
    ('<a href="JaVaScRiPt:alert(1)">x</a>', ["alert"]),
    ('<a href="&#106;avascript:alert(1)">x</a>', ["alert"]),
    ('<a href="data:text/html;base64,PHNjcmlwdD4=">x</a>', ["data:"]),
    ('<img src="data:image/svg+xml;base64,PHN2Zz4=">', ["data:"]),
    ('<p style="width: expression(alert(1))">x</p>', ["expression", "alert"]),
    ('<p style="background: url(https://evil.example/t.png)">x</p>', ["evil.example", "url("]),
    ("<svg onload=alert(1)><circle r=1 /></svg>", ["svg", "onload", "alert"]),
    ('<img src="https://evil.example/pixel.png">', ["evil.example"]),
    ('<img src="//evil.example/pixel.png">', ["evil.example"]),
    ('<link rel="stylesheet" href="https://evil.example/x.css">', ["evil.example", "<link"]),
    ("<style>@import 'https://evil.example/x.css';</style>", ["evil.example", "@import"]),
    ('<iframe src="https://evil.example"></iframe>', ["iframe", "evil.example"]),
    ('<object data="https://evil.example/x.swf"></object>', ["object", "evil.example"]),
    ('<form action="https://evil.example"><input name="q"></form>', ["form", "input", "evil.example"]),
    ('<meta http-equiv="refresh" content="0;url=https://evil.example">', ["meta", "evil.example"]),
    ('<body onload="alert(1)">x</body>', ["onload", "alert"]),
    ('<table background="https://evil.example/bg.png"><tr><td>x</td></tr></table>', ["evil.example"]),
    ('<div onclick="alert(1)" onmouseover="alert(2)">x</div>', ["onclick", "onmouseover", "alert"]),
    ("<p>ok</p><!-- <script>alert(1)</script> -->", ["<!--", "alert"]),
    ('<math><mi xlink:href="javascript:alert(1)">x</mi></math>', ["javascript:", "alert"]),
    ('<img srcset="https://evil.example/a.png 1x">', ["evil.example"]),
    ('<video poster="https://evil.example/p.png"></video>', ["evil.example"]),
]


@pytest.mark.parametrize(("hostile", "forbidden"), HOSTILE)
def test_hostile_html_is_sanitized(hostile, forbidden):
    # when hostile HTML goes through the renderer of an html template
    html = render(type="html", content={"text": "", "html": hostile}, context={}).html
    # then nothing dangerous survives
    for needle in forbidden:
        assert needle.lower() not in html.lower(), html


def test_harmless_html_survives_sanitizing():
    markup = (
        '<p style="color:#ff0000">Red</p><a href="https://example.com">site</a>'
        '<img src="cid:logo" alt="Logo"><table><tr><td>x</td></tr></table>'
    )
    cleaned = sanitize(markup)
    assert 'style="color:#ff0000"' in cleaned
    assert 'href="https://example.com"' in cleaned
    assert 'src="cid:logo"' in cleaned
    assert "<td>x</td>" in cleaned


def test_a_value_cannot_smuggle_a_javascript_url_into_an_attribute():
    # given a template that puts a value into a link and a ticket subject chosen by an end user
    content = {"text": "", "html": '<a href="{{ticket.subject}}">open</a>'}
    # when rendered
    html = render(
        type="html", content=content, context={"ticket.subject": "javascript:alert(document.cookie)"}
    ).html
    # then the link lost its href
    assert "javascript" not in html


def test_rendering_never_opens_a_connection(monkeypatch):
    # given a template full of remote resources, and sockets that fail the test when used
    def refuse(*args, **kwargs):
        raise AssertionError("the renderer opened a connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    content = {
        "text": "See https://example.com",
        "html": '<img src="https://evil.example/a.png"><link href="https://evil.example/x.css" rel="stylesheet">',
    }
    # when rendered (both types), nothing connects
    render(type="html", content=content, context={})
    render(type="visual", content=content, context={})


def test_an_html_template_without_text_gets_the_text_of_its_html():
    content = {"text": "", "html": "<h1>Hi {{requester.name}}</h1><p>One<br>Two</p><script>x()</script>"}
    rendered = render(type="html", content=content, context=CONTEXT)
    assert rendered.text == "Hi Ann & Co\nOne\nTwo"


def test_a_visual_template_shows_its_logo_by_content_id():
    rendered = render(type="visual", content={"text": "Hi"}, context={}, logo_cid="logo-1")
    assert '<img src="cid:logo-1" alt="" width="200">' in rendered.html
    assert "<img" not in render(type="visual", content={"text": "Hi"}, context={}).html
