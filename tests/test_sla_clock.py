"""Business-time arithmetic (tickets.sla.clock), against cases computed by hand from the tz database.

Europe/Warsaw: CET (+01:00) to CEST (+02:00) on 31 March 2024 at 02:00, back on 27 October 2024 at 03:00.
America/Sao_Paulo: Brazil has had no DST since 2019, so these cases use 2018/2019 dates, which zoneinfo still
holds: -03:00 to -02:00 on 4 November 2018 at 00:00, back on 17 February 2019 at 00:00 (23:00 of the 16th again).
Asia/Kathmandu: +05:45 all year.
No database: pure functions.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tickets.sla import clock

H = 3600
WEEKDAYS = {day: [["09:00", "17:00"]] for day in ("mon", "tue", "wed", "thu", "fri")}


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_24_7_is_plain_arithmetic():
    start = utc(2024, 3, 30, 23, 0)
    assert clock.add(None, start, 5 * H) == utc(2024, 3, 31, 4, 0)
    assert clock.between(None, start, utc(2024, 3, 31, 4, 0)) == 5 * H


def test_warsaw_weekend_holiday_and_spring_forward():
    # Friday 29 March 2024 16:00 CET (15:00 UTC); Easter Monday 1 April a holiday; Tuesday already CEST.
    schedule = clock.Schedule.of("Europe/Warsaw", WEEKDAYS, ["2024-04-01"])
    start = utc(2024, 3, 29, 15, 0)
    # 1 h on Friday (until 17:00 CET), then Tuesday 09:00 CEST = 07:00 UTC, + 1 h
    due = clock.add(schedule, start, 2 * H)
    assert due == utc(2024, 4, 2, 8, 0)
    assert clock.between(schedule, start, due) == 2 * H


def test_warsaw_day_of_spring_forward_lasts_23_hours():
    schedule = clock.Schedule.of("Europe/Warsaw", {"sun": [["00:00", "24:00"]]})
    # Sunday 31 March 2024 00:00 CET = 30 March 23:00 UTC; Monday 00:00 CEST = 31 March 22:00 UTC
    assert clock.between(schedule, utc(2024, 3, 30, 23, 0), utc(2024, 3, 31, 22, 0)) == 23 * H
    # 23 h of that Sunday are used up at its end; one more hour is the next Sunday 01:00 CEST (6 April 23:00 UTC)
    assert clock.add(schedule, utc(2024, 3, 30, 23, 0), 23 * H) == utc(2024, 3, 31, 22, 0)
    assert clock.add(schedule, utc(2024, 3, 30, 23, 0), 24 * H) == utc(2024, 4, 6, 23, 0)


def test_warsaw_day_of_fall_back_lasts_25_hours():
    schedule = clock.Schedule.of("Europe/Warsaw", {"sun": [["00:00", "24:00"]]})
    # Sunday 27 October 2024 00:00 CEST = 26 October 22:00 UTC; Monday 00:00 CET = 27 October 23:00 UTC
    assert clock.between(schedule, utc(2024, 10, 26, 22, 0), utc(2024, 10, 27, 23, 0)) == 25 * H


def test_warsaw_interval_across_the_skipped_hour():
    # 01:00-04:00 on 31 March 2024: 01:00 CET = 00:00 UTC, 04:00 CEST = 02:00 UTC: two real hours
    schedule = clock.Schedule.of("Europe/Warsaw", {"sun": [["01:00", "04:00"]]})
    assert clock.between(schedule, utc(2024, 3, 30, 0, 0), utc(2024, 4, 1, 0, 0)) == 2 * H
    # 2.5 h: the 2 h of that night, then 30 min from the next Sunday's 01:00 CEST (6 April 23:00 UTC)
    assert clock.add(schedule, utc(2024, 3, 31, 0, 0), 2.5 * H) == utc(2024, 4, 6, 23, 30)


def test_warsaw_a_skipped_wall_time_is_read_with_the_offset_before_the_change():
    # 02:30 does not exist on 31 March 2024: read as 02:30 CET = 01:30 UTC (03:30 CEST); 05:00 CEST = 03:00 UTC
    schedule = clock.Schedule.of("Europe/Warsaw", {"sun": [["02:30", "05:00"]]})
    assert clock.between(schedule, utc(2024, 3, 31, 0, 0), utc(2024, 3, 31, 12, 0)) == 1.5 * H
    assert clock.add(schedule, utc(2024, 3, 31, 0, 0), 0) == utc(2024, 3, 31, 1, 30)


def test_warsaw_interval_across_the_repeated_hour():
    # 01:00-04:00 on 27 October 2024: 01:00 CEST = 26 Oct 23:00 UTC, 04:00 CET = 03:00 UTC: four real hours
    schedule = clock.Schedule.of("Europe/Warsaw", {"sun": [["01:00", "04:00"]]})
    assert clock.between(schedule, utc(2024, 10, 26, 12, 0), utc(2024, 10, 27, 12, 0)) == 4 * H


def test_sao_paulo_2018_holiday_weekend_and_spring_forward():
    # Thursday 1 November 2018 17:00 -03 (20:00 UTC); Friday 2 November (Finados) a holiday; DST from Sunday 4
    # November; Monday 08:00 -02 = 10:00 UTC.
    week = {day: [["08:00", "18:00"]] for day in ("mon", "tue", "wed", "thu", "fri")}
    schedule = clock.Schedule.of("America/Sao_Paulo", week, ["2018-11-02"])
    start = utc(2018, 11, 1, 20, 0)
    due = clock.add(schedule, start, 3 * H)  # 1 h on Thursday, 2 h on Monday
    assert due == utc(2018, 11, 5, 12, 0)
    assert clock.between(schedule, start, due) == 3 * H


def test_sao_paulo_2018_midnight_that_never_was():
    # 4 November 2018 began at 01:00 (-02): the day 00:00-24:00 is 23 real hours; 00:00 read as -03 (03:00 UTC)
    schedule = clock.Schedule.of("America/Sao_Paulo", {"sun": [["00:00", "24:00"]]})
    assert clock.add(schedule, utc(2018, 11, 4, 0, 0), 0) == utc(2018, 11, 4, 3, 0)
    assert clock.between(schedule, utc(2018, 11, 4, 0, 0), utc(2018, 11, 6, 0, 0)) == 23 * H


def test_sao_paulo_2019_fall_back_repeats_an_hour():
    # Saturday 16 February 2019 lasted 25 hours: 00:00 -02 (02:00 UTC) to Sunday 00:00 -03 (03:00 UTC on the 17th)
    schedule = clock.Schedule.of("America/Sao_Paulo", {"sat": [["00:00", "24:00"]]})
    assert clock.between(schedule, utc(2019, 2, 16, 0, 0), utc(2019, 2, 18, 0, 0)) == 25 * H


def test_kathmandu_quarter_hour_offset_and_weekend():
    # Nepal works Sunday to Friday; Friday 14 June 2024 16:30 +05:45 = 10:45 UTC
    week = {day: [["10:00", "17:00"]] for day in ("sun", "mon", "tue", "wed", "thu", "fri")}
    schedule = clock.Schedule.of("Asia/Kathmandu", week)
    start = utc(2024, 6, 14, 10, 45)
    # 30 min on Friday, Saturday off, Sunday 10:00 +05:45 = 04:15 UTC, + 1.5 h = 05:45 UTC
    due = clock.add(schedule, start, 2 * H)
    assert due == utc(2024, 6, 16, 5, 45)
    assert clock.between(schedule, start, due) == 2 * H


def test_kathmandu_holiday_is_skipped():
    week = {day: [["10:00", "17:00"]] for day in ("sun", "mon", "tue", "wed", "thu", "fri")}
    schedule = clock.Schedule.of("Asia/Kathmandu", week, ["2024-06-16"])
    # Friday as above, Sunday a holiday: Monday 17 June 10:00 = 04:15 UTC, + 1.5 h
    assert clock.add(schedule, utc(2024, 6, 14, 10, 45), 2 * H) == utc(2024, 6, 17, 5, 45)


def test_an_overnight_shift_split_at_midnight_runs_on():
    # Monday 22:00-24:00 and Tuesday 00:00-06:00 (Warsaw, winter, +01:00)
    schedule = clock.Schedule.of("Europe/Warsaw", {"mon": [["22:00", "24:00"]], "tue": [["00:00", "06:00"]]})
    start = utc(2024, 1, 15, 22, 0)  # Monday 23:00 local
    assert clock.add(schedule, start, 3 * H) == utc(2024, 1, 16, 1, 0)  # Tuesday 02:00 local
    # 7 h up to Tuesday 06:00, the eighth from the next Monday 22:00 local: 23:00 local = 22:00 UTC
    assert clock.add(schedule, start, 8 * H) == utc(2024, 1, 22, 22, 0)
    assert clock.between(schedule, start, utc(2024, 1, 22, 21, 0)) == 7 * H


def test_a_moment_in_a_gap_starts_at_the_next_opening():
    schedule = clock.Schedule.of("Europe/Warsaw", WEEKDAYS)
    saturday = utc(2024, 1, 13, 12, 0)
    assert clock.add(schedule, saturday, 30 * 60) == utc(2024, 1, 15, 8, 30)  # Monday 09:30 +01:00
    assert clock.between(schedule, saturday, utc(2024, 1, 15, 8, 0)) == 0


def test_pause_and_resume_keeps_what_was_left():
    # a clock of 4 business hours started Monday 15 January 2024 09:00 Warsaw (08:00 UTC), paused at 11:00 local
    # (2 h left), resumed on Wednesday 16:00 local: 1 h that day, 1 h on Thursday
    schedule = clock.Schedule.of("Europe/Warsaw", WEEKDAYS)
    due = clock.add(schedule, utc(2024, 1, 15, 8, 0), 4 * H)
    assert due == utc(2024, 1, 15, 12, 0)
    left = clock.between(schedule, utc(2024, 1, 15, 10, 0), due)
    assert left == 2 * H
    assert clock.add(schedule, utc(2024, 1, 17, 15, 0), left) == utc(2024, 1, 18, 9, 0)


def test_between_is_negative_backwards():
    schedule = clock.Schedule.of("Europe/Warsaw", WEEKDAYS)
    assert clock.between(schedule, utc(2024, 1, 15, 12, 0), utc(2024, 1, 15, 10, 0)) == -2 * H


def test_add_and_between_are_inverse_over_a_year_of_starts():
    schedule = clock.Schedule.of("Europe/Warsaw", WEEKDAYS, ["2024-12-25", "2024-12-26"])
    start = utc(2024, 1, 1, 0, 0)
    for step in range(0, 366 * 24, 7):
        moment = start + timedelta(hours=step)
        due = clock.add(schedule, moment, 5 * H + 17 * 60)
        assert clock.between(schedule, moment, due) == 5 * H + 17 * 60


@pytest.mark.parametrize("text", ["9:00", "24:01", "12:60", "ab:cd", "", None, "12-00"])
def test_minutes_refuses_what_is_not_a_time(text):
    with pytest.raises(ValueError):
        clock.minutes(text)


def test_a_schedule_without_any_working_time_gives_up():
    schedule = clock.Schedule.of("UTC", {})
    with pytest.raises(ValueError):
        clock.add(schedule, utc(2024, 1, 1), 60)
