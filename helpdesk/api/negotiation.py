"""DRF's content negotiation, its answer remembered per process (`REST_FRAMEWORK["DEFAULT_CONTENT_NEGOTIATION_CLASS"]`).

Every API request asks which renderer answers it. DRF parses the Accept header into media types and matches
them against each renderer's on every request, yet the answer is a function of the view's renderer classes, the
format asked for (a `.json` suffix or `?format=`) and the Accept header's text alone. So the first request of
each such triple negotiates as DRF does, and the next ones reuse its answer (which of the view's renderers, and
the media type). A refusal (406, or a 404 for an unknown format) is never remembered: DRF raises it each time.
Measured (bench/README.md, issue 34, `search3` branch, bench/cpu.py --instructions, 100k set): the inbox
search 4.81 M -> 4.36 M instructions.
"""

from __future__ import annotations

from rest_framework.negotiation import DefaultContentNegotiation

MOST = 256  # answers held per process (Accept headers vary little; an unusual one costs a negotiation)


class RememberedContentNegotiation(DefaultContentNegotiation):
    _answers: dict[tuple, tuple[int, str]] = {}

    def select_renderer(self, request, renderers, format_suffix=None):
        format = format_suffix or request.query_params.get(self.settings.URL_FORMAT_OVERRIDE)
        key = (tuple(type(renderer) for renderer in renderers), format, request.META.get("HTTP_ACCEPT"))
        answer = self._answers.get(key)
        if answer is None:
            renderer, media_type = super().select_renderer(request, renderers, format_suffix)
            answer = (next(i for i, r in enumerate(renderers) if r is renderer), media_type)
            if len(self._answers) >= MOST:
                self._answers.clear()
            self._answers[key] = answer
        return renderers[answer[0]], answer[1]
