"""Email metrics through the official Python SDK (PyPI `resend`): resend.Emails.metrics, which
sends its params as `GET /emails/metrics` query parameters (lists joined with commas).
Counters are per team and sending domain. A team of its own (made with the suite's operator
key) shows the unfiltered answer, all zero; the counting tests send in the operator's team
(the only one whose domains the suite can verify without DNS), each from a domain of its own,
and filter by `domain_id` or `email_id`, so their totals are exact. The suite's herald
delivers nothing, so only `sent` grows and the rates stay 0."""

import re
import uuid
from datetime import date, datetime, timedelta, timezone

import pytest
import resend
from resend.exceptions import ResendError, ValidationError

from conftest import assert_error, key_name, raw, unique_domain, using_key, verify_without_dns

# Every metric, in Resend's order: what an answer lists when none is asked.
ALL = [
    "received", "delivered", "complained", "suppressed", "bounced", "bounced_transient",
    "bounced_permanent", "bounced_undetermined", "opened", "clicked", "unsubscribed",
    "delivery_delayed", "failed", "sent", "unique_opened", "unique_clicked", "delivery_rate",
    "open_rate", "click_rate", "bounce_rate", "complaint_rate", "unsubscribe_rate",
]  # fmt: skip
# RFC 3339 on a 15-minute edge, with the zone's offset.
EDGE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:(00|15|30|45):00[+-]\d{2}:\d{2}$")


def team_key(label):
    """The first key of a new team of its own."""
    response = raw("POST", "/teams", json={"name": key_name(label)})
    assert response.status_code == 201, response.text
    return response.json()["api_key"]["token"]


def sending_domain(label, n):
    """A new domain of the operator's team, verified without DNS, that has sent `n` emails:
    its id, name and the emails' ids."""
    name = unique_domain(f"metrics-{label}")
    domain_id = resend.Domains.create({"name": name})["id"]
    verify_without_dns(domain_id)
    sender = f"Metrics <hello@{name}>"
    emails = [
        resend.Emails.send({"from": sender, "to": "someone@recipient.test", "subject": f"py metrics {i}", "text": "Hi"})["id"]
        for i in range(n)
    ]
    return {"id": domain_id, "name": name, "emails": emails}


def test_a_new_teams_metrics_list_every_metric_all_zero_over_the_last_7_days_in_utc():
    with using_key(team_key("metrics-empty")):
        before = datetime.now(timezone.utc)
        answer = resend.Emails.metrics()
        after = datetime.now(timezone.utc)
    assert answer["object"] == "metrics"
    assert answer["metrics"] == ALL
    assert answer["dimensions"] == []
    assert answer["granularity"] == "daily"
    assert answer["timezone"] == "UTC"
    assert answer["totals"] == {name: 0 for name in ALL}
    assert "data" not in answer, "no dimensions, no data"
    # Now rounded up to the next 15-minute edge; the start of the day 6 days before.
    for at in (answer["start_date"], answer["end_date"]):
        assert EDGE_RE.match(at) and at.endswith("+00:00"), at
    end = datetime.fromisoformat(answer["end_date"])
    assert before - timedelta(seconds=1) <= end <= after + timedelta(minutes=15), answer["end_date"]
    starts = {f"{(t - timedelta(days=6)).date()}T00:00:00+00:00" for t in (before, after)}
    assert answer["start_date"] in starts, (answer["start_date"], starts)


def test_sent_counts_emails_sent_now_per_domain_and_rates_stay_zero():
    domain = sending_domain("sent", 2)
    sender = f"hello@{domain['name']}"
    resend.Batch.send([{"from": sender, "to": "a@recipient.test", "subject": "py metrics batch", "text": "Hi"}])
    later = (datetime.now(timezone.utc) + timedelta(hours=1)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    scheduled = resend.Emails.send(
        {"from": sender, "to": "b@recipient.test", "subject": "py metrics later", "text": "Hi", "scheduled_at": later}
    )
    other = sending_domain("quiet", 0)

    answer = resend.Emails.metrics({"domain_id": [domain["id"]], "metrics": ["sent", "delivery_rate"]})
    assert answer["metrics"] == ["sent", "delivery_rate"]
    assert answer["totals"] == {"sent": 3, "delivery_rate": 0}, "the batch counts, the scheduled email not"
    assert "data" not in answer
    asked = resend.Emails.metrics({"domain_id": [domain["id"]], "metrics": ["bounce_rate", "sent", "bounce_rate"]})
    assert asked["metrics"] == ["bounce_rate", "sent"], "in the order asked, each once"
    assert resend.Emails.metrics({"domain_id": [other["id"]], "metrics": ["sent"]})["totals"] == {"sent": 0}
    both = resend.Emails.metrics({"domain_id": [domain["id"], other["id"]], "metrics": ["sent"]})
    assert both["totals"] == {"sent": 3}
    resend.Emails.cancel(scheduled["id"])


def test_period_dimension_has_a_row_for_each_day_of_the_range_in_the_time_zone():
    domain = sending_domain("period", 2)
    answer = resend.Emails.metrics(
        {
            "domain_id": [domain["id"]],
            "metrics": ["sent"],
            "dimensions": ["period"],
            "granularity": "daily",
            "timezone": "America/New_York",
        }
    )
    assert answer["timezone"] == "America/New_York"
    assert answer["dimensions"] == ["period"]
    assert re.search(r"T00:00:00-0[45]:00$", answer["start_date"]), answer["start_date"]
    assert EDGE_RE.match(answer["end_date"]) and re.search(r"-0[45]:00$", answer["end_date"]), answer["end_date"]
    rows = answer["data"]
    assert len(rows) == 7, rows
    assert rows[0]["period"] == answer["start_date"]
    days = [date.fromisoformat(row["period"][:10]) for row in rows]
    for row in rows:
        assert set(row) == {"period", "sent"}
        assert re.match(r"^\d{4}-\d{2}-\d{2}T00:00:00-0[45]:00$", row["period"]), row["period"]
    assert days == [days[0] + timedelta(days=i) for i in range(7)], "consecutive days"
    # The range ends (exclusive) at end_date: on a midnight, the day before is the last row.
    end = datetime.fromisoformat(answer["end_date"]) - timedelta(microseconds=1)
    assert days[-1] == end.date()
    assert sum(row["sent"] for row in rows) == answer["totals"]["sent"] == 2


def test_explicit_dates_are_rounded_out_to_15_minute_edges_with_hourly_periods():
    domain = sending_domain("hourly", 0)
    answer = resend.Emails.metrics(
        {
            "domain_id": [domain["id"]],
            "start_date": "2025-01-10T08:07:00Z",
            "end_date": "2025-01-10T10:01:00Z",
            "granularity": "hourly",
            "dimensions": ["period"],
            "metrics": ["sent"],
        }
    )
    assert answer["start_date"] == "2025-01-10T08:00:00+00:00"
    assert answer["end_date"] == "2025-01-10T10:15:00+00:00"
    assert answer["data"] == [{"period": f"2025-01-10T{h}:00:00+00:00", "sent": 0} for h in ("08", "09", "10")]
    # A bare end date includes its day, in the zone asked.
    day = resend.Emails.metrics(
        {"domain_id": [domain["id"]], "start_date": "2025-01-10", "end_date": "2025-01-10", "timezone": "Europe/Paris"}
    )
    assert (day["start_date"], day["end_date"]) == ("2025-01-10T00:00:00+01:00", "2025-01-11T00:00:00+01:00")


def test_domain_and_email_dimensions_have_a_row_per_domain_and_per_email():
    a, b = sending_domain("by-domain-a", 2), sending_domain("by-domain-b", 1)
    by_domain = resend.Emails.metrics(
        {"domain_id": [a["id"], b["id"]], "dimensions": ["domain"], "metrics": ["sent", "bounced"]}
    )
    assert by_domain["dimensions"] == ["domain"]
    assert sorted(by_domain["data"], key=lambda row: row["domain_name"]) == sorted(
        [
            {"domain_id": a["id"], "domain_name": a["name"], "sent": 2, "bounced": 0},
            {"domain_id": b["id"], "domain_name": b["name"], "sent": 1, "bounced": 0},
        ],
        key=lambda row: row["domain_name"],
    )
    assert by_domain["totals"] == {"sent": 3, "bounced": 0}

    email_id = a["emails"][0]
    by_email = resend.Emails.metrics(
        {"email_id": [email_id], "dimensions": ["email"], "metrics": ["sent", "delivered", "opened"]}
    )
    assert by_email["dimensions"] == ["email"]
    assert by_email["data"] == [{"email_id": email_id, "sent": 1, "delivered": 0, "opened": 0}]
    assert by_email["totals"] == {"sent": 1, "delivered": 0, "opened": 0}


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"granularity": "yearly"}, "granularity"),
        ({"metrics": ["views"]}, "metrics"),
        ({"dimensions": ["country"]}, "dimensions"),
        ({"start_date": "yesterday"}, "start_date"),
        ({"start_date": "2026-11-20", "end_date": "2026-11-10"}, "start_date"),
        ({"dimensions": ["email"]}, "email_id"),
        ({"email_id": ["not-an-id"]}, "email_id"),
        ({"broadcast_id": [str(uuid.uuid4())]}, "broadcast_id"),
        ({"dimensions": ["broadcast"]}, "broadcast"),
    ],
)
def test_bad_parameters_get_422_validation_error_naming_the_parameter(params, named):
    with pytest.raises(ResendError) as excinfo:
        resend.Emails.metrics(params)
    error = assert_error(excinfo, 422, "validation_error", ValidationError)
    assert named in error.message, error.message


def test_the_sdk_refuses_email_with_broadcast_before_sending():
    # resend.Emails.metrics checks this itself (_validate_metrics_params) and raises ValueError.
    both = {"email_id": [str(uuid.uuid4())], "broadcast_id": [str(uuid.uuid4())]}
    for params in (both, {"dimensions": ["email", "broadcast"]}):
        with pytest.raises(ValueError, match="broadcast"):
            resend.Emails.metrics(params)  # type: ignore[arg-type]


def test_unknown_or_foreign_email_gets_404_and_a_sending_access_key_gets_401():
    with pytest.raises(ResendError) as excinfo:
        resend.Emails.metrics({"email_id": [str(uuid.uuid4())], "dimensions": ["email"]})
    assert_error(excinfo, 404, "not_found")
    emails = sending_domain("foreign", 1)["emails"]
    with using_key(team_key("metrics-other")), pytest.raises(ResendError) as excinfo:
        resend.Emails.metrics({"email_id": emails})
    assert_error(excinfo, 404, "not_found")
    created = resend.ApiKeys.create({"name": key_name("metrics-sending"), "permission": "sending_access"})
    with using_key(created["token"]), pytest.raises(ResendError) as excinfo:
        resend.Emails.metrics()
    assert_error(excinfo, 401, "restricted_api_key")
    resend.ApiKeys.remove(created["id"])
