"""Charts drawn on the server as inline SVG: no script, no font or file from elsewhere, readable without colour
(the bars carry a <title> each, and the legend and totals are text)."""

from __future__ import annotations

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

CREATED_COLOUR, SOLVED_COLOUR = "#417690", "#70bf2b"  # the admin's own blue, and a green for done


def created_solved_chart(days, *, width: int = 620, height: int = 170) -> SafeString:
    """Created vs solved tickets per day: a pair of bars per day, a scale line at the busiest day, a date every
    week. `days` have `date`, `created` and `solved`."""
    left, bottom, top = 28, 22, 16
    plot_h = height - bottom - top
    step = (width - left) / max(len(days), 1)
    bar = max(step / 2 - 1.5, 1)
    peak = max([max(d.created, d.solved) for d in days] + [1])

    def y(value):
        return top + plot_h - plot_h * value / peak

    bars = []
    for i, day in enumerate(days):
        x = left + i * step
        for offset, value, colour, what in (
            (0, day.created, CREATED_COLOUR, "created"),
            (bar + 0.5, day.solved, SOLVED_COLOUR, "solved"),
        ):
            bars.append(
                (
                    round(x + offset, 1),
                    round(y(value), 1),
                    round(bar, 1),
                    round(plot_h + top - y(value), 1),
                    colour,
                    f"{day.date:%b %d}: {value} {what}",
                )
            )
    labels = [
        (round(left + i * step, 1), height - 6, f"{day.date:%b %d}")
        for i, day in enumerate(days)
        if i % 7 == 0
    ]
    return format_html(
        '<svg class="hd-chart" role="img" aria-label="Tickets created and solved per day, last {} days" '
        'viewBox="0 0 {} {}" width="{}" height="{}" xmlns="http://www.w3.org/2000/svg" font-size="10" '
        'font-family="sans-serif">'
        '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#ccc"/>'
        '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#999"/>'
        '<text x="0" y="{}" fill="#666">{}</text><text x="0" y="{}" fill="#666">0</text>'
        "{}{}"
        '<rect x="{}" y="2" width="9" height="9" fill="{}"/><text x="{}" y="10">created</text>'
        '<rect x="{}" y="2" width="9" height="9" fill="{}"/><text x="{}" y="10">solved</text>'
        "</svg>",
        len(days), width, height, width, height,
        left, top, width, top,
        left, top + plot_h, width, top + plot_h,
        top + 4, peak, top + plot_h,
        format_html_join(
            "", '<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}</title></rect>', bars
        ),
        format_html_join("", '<text x="{}" y="{}" fill="#666">{}</text>', labels),
        width - 150, CREATED_COLOUR, width - 137, width - 75, SOLVED_COLOUR, width - 62,
    )  # fmt: skip
