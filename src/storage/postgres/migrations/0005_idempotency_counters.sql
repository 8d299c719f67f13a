-- Idempotency keys (unique across nodes) and the counters of metrics, quotas and source addresses.

-- What each idempotency key answered: one row per team and key, and the primary key is
-- what makes a key exactly-once across the nodes. `id` is this write's own (new each
-- time the key is written), so an expiry that found the row before it was written again
-- names a row that is gone and deletes nothing. `writer` is the process that wrote it
-- (whose in-flight set kept its own requests for the key apart); `answers_until` is
-- `created_at` plus the retention, until when another writer may not replace it.
CREATE TABLE idempotency_keys (
    team_id uuid NOT NULL,
    -- SHA-256 of the key as sent: the key itself is never kept.
    key_digest bytea NOT NULL CHECK (octet_length(key_digest) = 32),
    id uuid NOT NULL UNIQUE,
    writer uuid NOT NULL,
    body_sha256 text NOT NULL,
    -- The answer: an SMTP submission's email, or a REST request's status and body.
    email_id uuid,
    status integer,
    response text,
    created_at timestamptz NOT NULL,
    answers_until timestamptz NOT NULL,
    PRIMARY KEY (team_id, key_digest),
    CHECK ((email_id IS NOT NULL AND status IS NULL AND response IS NULL)
        OR (email_id IS NULL AND status IS NOT NULL AND response IS NOT NULL))
);
-- The expiry's queue: records by the time they were written.
CREATE INDEX idempotency_keys_by_time ON idempotency_keys (created_at, id);

-- Two nodes that took one key at once (each holds its keys in flight on its own) both
-- write its row in the transaction of the email they answer with: the first to commit
-- wins, and the second, finding a row another process wrote that still answers, fails
-- with a serialization failure. Its email is not written, its request is told to try
-- again (503, SMTP 451), and the retry is answered from the winner's row. A row written
-- again by its own process (a change run again, or a key answered again on one node) or
-- past `answers_until` is replaced.
CREATE FUNCTION idempotency_key_taken() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'idempotency key answered by another node meanwhile'
        USING ERRCODE = 'serialization_failure';
END;
$$;
CREATE TRIGGER idempotency_keys_answered_once BEFORE UPDATE ON idempotency_keys
    FOR EACH ROW
    WHEN (OLD.id <> NEW.id AND OLD.writer <> NEW.writer AND OLD.answers_until > NEW.created_at)
    EXECUTE FUNCTION idempotency_key_taken();

-- The counters behind the metrics: per team, 15-minute UTC bucket (milliseconds since
-- the epoch over 900,000), sending domain and metric, how many events. Every event adds
-- to its row in the transaction that records it. `retention_from` is the start of the
-- bucket's UTC day: a day's rows leave together, `[retention] metrics` after it.
CREATE TABLE metric_counts (
    team_id uuid NOT NULL,
    bucket bigint NOT NULL CHECK (bucket >= 0),
    domain text NOT NULL,
    metric text NOT NULL CHECK (metric IN ('sent', 'scheduled', 'delivered', 'delivery_delayed',
        'bounced_permanent', 'bounced_transient', 'bounced_undetermined', 'complained', 'opened',
        'unique_opened', 'clicked', 'unique_clicked', 'failed', 'suppressed', 'canceled',
        'unsubscribed')),
    n bigint NOT NULL CHECK (n >= 0),
    retention_from timestamptz NOT NULL,
    PRIMARY KEY (team_id, bucket, domain, metric)
);
CREATE INDEX metric_counts_by_retention ON metric_counts (retention_from);

-- The emails each team sent in a UTC day (days since 1970-01-01) or month (months since
-- year 0), against its plan's quotas; kept `[retention] metrics` after the period's end
-- (`retention_from`).
CREATE TABLE quota_counts (
    team_id uuid NOT NULL,
    period text NOT NULL CHECK (period IN ('day', 'month')),
    number bigint NOT NULL CHECK (number >= 0),
    n bigint NOT NULL CHECK (n >= 0),
    retention_from timestamptz NOT NULL,
    PRIMARY KEY (team_id, period, number)
);
CREATE INDEX quota_counts_by_retention ON quota_counts (retention_from);

-- The messages sent from each source address in a UTC day, against its warm-up limit;
-- kept `[retention] metrics` after the day's end (`retention_from`).
CREATE TABLE source_counts (
    address inet NOT NULL,
    day bigint NOT NULL CHECK (day >= 0),
    n bigint NOT NULL CHECK (n >= 0),
    retention_from timestamptz NOT NULL,
    PRIMARY KEY (address, day)
);
CREATE INDEX source_counts_by_retention ON source_counts (retention_from);
