"""The SLA clocks' moves (tickets.sla.tracker), pure: no database. Times are hand-computed in Europe/Warsaw
business hours (Monday to Friday 09:00-17:00) across the spring-forward weekend of 2024 (31 March)."""

from __future__ import annotations

from datetime import UTC, datetime

from tickets.sla import clock, tracker
from tickets.sla.tracker import Write

WEEK = {day: [["09:00", "17:00"]] for day in ("mon", "tue", "wed", "thu", "fri")}
SCHEDULE = clock.Schedule.of("Europe/Warsaw", WEEK, ["2024-04-01"])  # Easter Monday
TARGETS = {"firstResponse": 60, "nextResponse": 120, "resolution": 16 * 60}


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


def _write(now, status="open", targets=TARGETS, **flags) -> Write:
    return Write(now=now, status=status, targets=targets, **flags)


def _doc(state):
    return tracker.document(state, [])


def test_begin_starts_first_response_and_resolution():
    # Thursday 28 March 2024 16:00 CET (15:00 UTC)
    state = tracker.begin("p", _write(utc(2024, 3, 28, 15, 0), created=True), SCHEDULE)
    doc = _doc(state)
    assert doc["firstResponseDueAt"] == "2024-03-28T16:00:00.000Z"  # used up at Thursday's 17:00 CET
    # 1 h Thursday, 8 h Friday, Monday a holiday, Tuesday 09:00 CEST = 07:00 UTC + 7 h
    assert doc["resolutionDueAt"] == "2024-04-02T14:00:00.000Z"
    assert doc["nextResponseDueAt"] is None


def test_pause_over_the_dst_weekend_and_resume():
    state = tracker.begin("p", _write(utc(2024, 3, 28, 15, 0), created=True), SCHEDULE)
    # the agent answers on Friday 29 March 08:30 CET (07:30 UTC)
    state = tracker.advance(state, "p", _write(utc(2024, 3, 29, 7, 30), agent_response=True), SCHEDULE)
    assert _doc(state)["firstResponseDueAt"] is None
    # pending at Friday 12:00 CET (11:00 UTC): resolution used 1 h + 3 h, 12 h left
    state = tracker.advance(state, "p", _write(utc(2024, 3, 29, 11, 0), status="pending"), SCHEDULE)
    assert state["metrics"]["resolution"]["left"] == 12 * 3600
    assert _doc(state)["resolutionDueAt"] is None
    # open again on Tuesday 2 April 09:00 CEST (07:00 UTC): 8 h Tuesday, 4 h Wednesday -> 13:00 CEST = 11:00 UTC
    state = tracker.advance(state, "p", _write(utc(2024, 4, 2, 7, 0)), SCHEDULE)
    assert _doc(state)["resolutionDueAt"] == "2024-04-03T11:00:00.000Z"


def test_a_client_message_starts_the_next_response_only_after_the_first_is_met():
    start = utc(2024, 3, 26, 8, 0)  # Tuesday 09:00 CET
    state = tracker.begin("p", _write(start, created=True), SCHEDULE)
    state = tracker.advance(state, "p", _write(utc(2024, 3, 26, 8, 10), client_message=True), SCHEDULE)
    assert _doc(state)["nextResponseDueAt"] is None  # the first response still runs
    state = tracker.advance(state, "p", _write(utc(2024, 3, 26, 8, 20), agent_response=True), SCHEDULE)
    state = tracker.advance(state, "p", _write(utc(2024, 3, 26, 15, 30), client_message=True), SCHEDULE)
    # 16:30 CET + 2 h: 30 min Tuesday, 1.5 h Wednesday -> 10:30 CET = 09:30 UTC
    assert _doc(state)["nextResponseDueAt"] == "2024-03-27T09:30:00.000Z"


def test_a_client_message_while_pending_starts_the_next_response_held():
    state = tracker.begin("p", _write(utc(2024, 3, 26, 8, 0), created=True), SCHEDULE)
    state = tracker.advance(state, "p", _write(utc(2024, 3, 26, 8, 5), agent_response=True), SCHEDULE)
    state = tracker.advance(
        state, "p", _write(utc(2024, 3, 26, 9, 0), status="pending", client_message=True), SCHEDULE
    )
    assert state["metrics"]["nextResponse"]["left"] == 2 * 3600
    assert _doc(state)["nextResponseDueAt"] is None


def test_retarget_keeps_business_time_used():
    state = tracker.begin("p", _write(utc(2024, 3, 26, 8, 0), created=True), SCHEDULE)
    urgent = {"firstResponse": 15, "nextResponse": 30, "resolution": 120}
    # 40 minutes used of the first response: the new target's 15 are gone; due now
    state = tracker.advance(state, "p", _write(utc(2024, 3, 26, 8, 40), targets=urgent), SCHEDULE)
    assert _doc(state)["firstResponseDueAt"] == "2024-03-26T08:40:00.000Z"
    assert _doc(state)["resolutionDueAt"] == "2024-03-26T10:00:00.000Z"  # 80 min left


def test_retarget_to_untracked_stops_and_back_starts_fresh():
    state = tracker.begin("p", _write(utc(2024, 3, 26, 8, 0), created=True), SCHEDULE)
    none = {"firstResponse": None, "nextResponse": None, "resolution": None}
    state = tracker.advance(state, "p", _write(utc(2024, 3, 26, 9, 0), targets=none), SCHEDULE)
    assert tracker.due(state) is None
    state = tracker.advance(state, "p", _write(utc(2024, 3, 26, 10, 0)), SCHEDULE)
    assert _doc(state)["firstResponseDueAt"] == "2024-03-26T11:00:00.000Z"


def test_breach_marks_once_and_moves_the_nearest_due():
    state = tracker.begin("p", _write(utc(2024, 3, 26, 8, 0), created=True), SCHEDULE)
    assert tracker.due(state) == utc(2024, 3, 26, 9, 0)
    assert tracker.breach(state, utc(2024, 3, 26, 8, 59)) == []
    assert tracker.breach(state, utc(2024, 3, 26, 9, 0)) == [("firstResponse", utc(2024, 3, 26, 9, 0))]
    assert tracker.breach(state, utc(2024, 3, 26, 9, 1)) == []
    # the resolution: 16 business hours, all of Tuesday and Wednesday (17:00 CET = 16:00 UTC)
    assert tracker.due(state) == utc(2024, 3, 27, 16, 0)


def test_a_clock_past_due_is_not_held_until_its_breach_is_recorded():
    state = tracker.begin("p", _write(utc(2024, 3, 26, 8, 0), created=True), SCHEDULE)
    state = tracker.advance(state, "p", _write(utc(2024, 3, 26, 9, 30), status="pending"), SCHEDULE)
    assert state["metrics"]["firstResponse"]["due"] is not None  # left for the sweep
    assert state["metrics"]["resolution"]["due"] is None


def test_solving_meets_the_responses_and_holds_the_resolution():
    state = tracker.begin("p", _write(utc(2024, 3, 26, 8, 0), created=True), SCHEDULE)
    state = tracker.advance(state, "p", _write(utc(2024, 3, 26, 8, 30), status="solved"), SCHEDULE)
    metrics = state["metrics"]
    assert metrics["firstResponse"]["due"] is None and metrics["firstResponse"]["left"] is None
    assert metrics["resolution"]["left"] == 16 * 3600 - 30 * 60
