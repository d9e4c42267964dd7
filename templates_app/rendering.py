"""The one renderer of e-mails: a template plus a flat context -> {text, html}.

Placeholders are written `{{ name }}` (spaces optional) and are looked up in a flat dict of strings; there
is no attribute access, no filters, no loops and no expressions, so a template cannot reach anything beyond
its context. An unknown placeholder is refused when a template is saved; a missing value renders empty.

| placeholder            | value                                                            |
|------------------------|------------------------------------------------------------------|
| `{{ticket.subject}}`   | the ticket's subject                                             |
| `{{ticket.shortID}}`   | the ticket's short ID                                            |
| `{{requester.name}}`   | the requester's name                                             |
| `{{requester.email}}`  | the requester's e-mail address                                   |
| `{{message.text}}`     | the text of the latest message (the body of system e-mails)     |
| `{{agent.name}}`       | the replying agent's name                                        |
| `{{agent.signature}}`  | the replying agent's signature text                              |
| `{{license.companyName}}` | the license's company name (setting `companyName`)            |

The powered-by footer is appended to both parts when the license setting `poweredByFooter` is true.

- `html` templates: `content.html` with the placeholders replaced by HTML-escaped values, then sanitized
  with nh3 (no scripts, event handlers, `javascript:`/`data:` URLs, style expressions or remote resources;
  images only from `cid:` inline attachments). An empty `content.html` falls back to the visual layout.
- `visual` templates: HTML built here from `content.text` (escaped, paragraphs, links) and the appearance
  colors (`VISUAL_COLORS`; a null or missing value takes the default).
- The text part is `content.text` with raw values (an html template without text gets the text of its HTML).

Nothing here opens a connection: sanitizing removes remote URLs instead of fetching them.
"""

from __future__ import annotations

import dataclasses
import html as html_lib
import re

import nh3

PLACEHOLDERS = {
    "ticket.subject": "the ticket's subject",
    "ticket.shortID": "the ticket's short ID",
    "requester.name": "the requester's name",
    "requester.email": "the requester's e-mail address",
    "message.text": "the text of the latest message",
    "agent.name": "the replying agent's name",
    "agent.signature": "the replying agent's signature text",
    "license.companyName": "the license's company name",
}
PLACEHOLDER_RE = re.compile(r"\{\{\s*([A-Za-z][A-Za-z0-9_.]*)\s*\}\}")

# Appearance keys a visual template uses, with their defaults.
VISUAL_COLORS = {
    "backgroundColor": "#f4f5f7",
    "contentBackgroundColor": "#ffffff",
    "textColor": "#1f2328",
    "linkColor": "#0969da",
    "footerTextColor": "#6e7781",
}
COLOR_RE = re.compile(r"^#[0-9a-fA-F]{6}$")

POWERED_BY_TEXT = "Powered by HelpDesk"
POWERED_BY_HTML = '<p class="powered-by">Powered by HelpDesk</p>'

_TAGS = (nh3.ALLOWED_TAGS - {"area", "map"}) | {"font"}
_ATTRIBUTES = {
    "*": {"style", "align", "title", "dir", "lang", "class", "width", "height", "bgcolor", "color"},
    "a": {"href", "name", "target"},
    "img": {"src", "alt", "border"},
    "table": {"border", "cellpadding", "cellspacing", "role"},
    "td": {"colspan", "rowspan", "valign"},
    "th": {"colspan", "rowspan", "valign", "scope"},
    "font": {"face", "size"},
}
_STYLE_PROPERTIES = {
    "background-color", "border", "border-bottom", "border-collapse", "border-color", "border-left",
    "border-radius", "border-right", "border-spacing", "border-style", "border-top", "border-width", "color",
    "display", "font", "font-family", "font-size", "font-style", "font-weight", "height", "letter-spacing",
    "line-height", "margin", "margin-bottom", "margin-left", "margin-right", "margin-top", "max-width",
    "min-width", "padding", "padding-bottom", "padding-left", "padding-right", "padding-top", "text-align",
    "text-decoration", "text-transform", "vertical-align", "white-space", "width",
}  # fmt: skip
# Anything in a style value that can load a resource or run code.
_BAD_STYLE = re.compile(r"url\s*\(|expression|javascript:|@import|behavior|\\|image-set|-moz-binding", re.I)


def _attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    if attribute == "src":
        # Inline attachments only: a remote or data: image would be fetched or decoded by the reader.
        return value if value.strip().lower().startswith("cid:") else None
    if attribute == "style" and _BAD_STYLE.search(value):
        return None
    if attribute in ("bgcolor", "color") and not re.fullmatch(r"#?[0-9a-zA-Z]{1,20}", value.strip()):
        return None
    return value


def sanitize(markup: str) -> str:
    """User HTML -> HTML that is safe to send and to show in the preview."""
    return nh3.clean(
        markup,
        tags=_TAGS,
        clean_content_tags={
            "script",
            "style",
            "title",
            "noscript",
            "template",
            "iframe",
            "object",
            "svg",
            "math",
        },
        attributes=_ATTRIBUTES,
        attribute_filter=_attribute_filter,
        url_schemes={"http", "https", "mailto", "cid"},
        filter_style_properties=_STYLE_PROPERTIES,
        strip_comments=True,
        link_rel="noopener noreferrer",
    )


@dataclasses.dataclass(frozen=True)
class Rendered:
    text: str
    html: str

    def as_dict(self) -> dict:
        return {"text": self.text, "html": self.html}


def unknown_placeholders(source: str) -> list[str]:
    return sorted({name for name in PLACEHOLDER_RE.findall(source or "") if name not in PLACEHOLDERS})


def _substitute(source: str, context: dict, escape) -> str:
    def value(match: re.Match) -> str:
        name = match.group(1)
        raw = context.get(name) if name in PLACEHOLDERS else None
        return escape("" if raw is None else str(raw))

    return PLACEHOLDER_RE.sub(value, source or "")


def _tidy_text(text: str) -> str:
    # Missing values leave empty lines behind; keep at most one blank line in a row.
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


_URL_RE = re.compile(r"https?://[^\s<>\"']+")


def _text_to_html(text: str, link_color: str) -> str:
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    out = []
    for paragraph in paragraphs:
        escaped = html_lib.escape(paragraph)
        escaped = _URL_RE.sub(
            lambda m: f'<a href="{m.group(0)}" style="color:{link_color}">{m.group(0)}</a>', escaped
        )
        out.append("<p>" + escaped.replace("\n", "<br>") + "</p>")
    return "\n".join(out)


def _html_to_text(markup: str) -> str:
    """The text part of an html template that has no text of its own: its words, line by block."""
    markup = re.sub(r"<br\s*/?>|</(p|div|h[1-6]|li|tr|table|blockquote)>", "\n", markup, flags=re.I)
    return _tidy_text(html_lib.unescape(nh3.clean(markup, tags=set())))


def colors(appearance: dict | None) -> dict:
    """The visual layout's colors: the appearance's valid `color` values over the defaults."""
    chosen = dict(VISUAL_COLORS)
    for key, item in (appearance or {}).items():
        if key in chosen and isinstance(item, dict) and item.get("type") == "color":
            value = item.get("value")
            if isinstance(value, str) and COLOR_RE.match(value):
                chosen[key] = value.lower()
    return chosen


def _visual_html(body_html: str, palette: dict, footer: bool, logo_cid: str | None = None) -> str:
    footer_html = (
        f'<p style="color:{palette["footerTextColor"]};font-size:12px;text-align:center">{POWERED_BY_TEXT}</p>'
        if footer
        else ""
    )
    if logo_cid:
        logo = (
            f'<p style="text-align:center"><img src="cid:{html_lib.escape(logo_cid)}" alt="" width="200"></p>'
        )
        body_html = logo + body_html
    return (
        f'<div style="background-color:{palette["backgroundColor"]};padding:24px">'
        f'<div style="background-color:{palette["contentBackgroundColor"]};color:{palette["textColor"]};'
        f'max-width:600px;margin:0 auto;padding:24px;font-family:Helvetica, Arial, sans-serif;line-height:1.5">'
        f"{body_html}</div>{footer_html}</div>"
    )


def render_text(source: str, context: dict) -> Rendered:
    """A message's text (a canned response, a macro's reply) with its placeholders filled: the text, and the
    same paragraphs as HTML (escaped, links made clickable), without a template's layout around them."""
    text = _tidy_text(_substitute(source, context, escape=lambda v: v))
    return Rendered(text=text, html=_text_to_html(text, VISUAL_COLORS["linkColor"]))


def render(
    *,
    type: str,
    content: dict,
    context: dict,
    powered_by: bool = False,
    logo_cid: str | None = None,
    appendix: Rendered | None = None,
) -> Rendered:
    """Render one template (its `type` and `content`) with a flat context of strings.

    `logo_cid` puts the template's logo (an inline attachment) at the top of the visual layout; html
    templates place it themselves with `<img src="cid:...">`. `appendix` (text and HTML made by our own code,
    e.g. a ticket's thread) goes below the body and above the footer; its HTML is sanitized like the rest.
    """
    content = content or {}
    text = _tidy_text(_substitute(content.get("text", ""), context, escape=lambda v: v))
    palette = colors(content.get("appearance"))
    source_html = content.get("html") or ""
    extra_html = sanitize(appendix.html) if appendix and appendix.html else ""
    if type == "html" and source_html.strip():
        html = sanitize(_substitute(source_html, context, escape=html_lib.escape))
        if not text:
            text = _html_to_text(html)
        html += extra_html
        if powered_by:
            html += POWERED_BY_HTML
    else:
        body = _text_to_html(text, palette["linkColor"]) + extra_html
        html = _visual_html(body, palette, powered_by, logo_cid)
    if appendix and appendix.text:
        text = f"{text}\n\n{appendix.text}".strip()
    if powered_by:
        text = f"{text}\n\n-- \n{POWERED_BY_TEXT}"
    return Rendered(text=text, html=html)
