-- Emails: records with status, events and delivery attempts, and the content kept for
-- [retention] content.

-- One row per email: what was sent (the record), and what became of it (the status:
-- `last_event`, opens and clicks; its attempts apart). `records_due_at` and
-- `content_due_at` are the retention's queues, set at the final outcome.
CREATE TABLE emails (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    api_key_id uuid,
    from_address text NOT NULL,
    to_addresses text[] NOT NULL,
    cc text[] NOT NULL,
    bcc text[] NOT NULL,
    reply_to text[] NOT NULL,
    subject text NOT NULL,
    html text,
    text_body text,
    tag_names text[] NOT NULL,
    tag_values text[] NOT NULL,
    created_at timestamptz NOT NULL,
    scheduled_at timestamptz,
    message_id text NOT NULL,
    size bigint NOT NULL,
    source text NOT NULL,
    template_id uuid,
    template_version_id uuid,
    topic_id uuid,
    content_expired boolean NOT NULL,
    content_in_message boolean NOT NULL,
    text_derived boolean NOT NULL,
    line_feeds boolean NOT NULL,
    broadcast_id uuid,
    request_log_id uuid,
    last_event text NOT NULL,
    opened boolean NOT NULL DEFAULT false,
    clicked boolean NOT NULL DEFAULT false,
    records_due_at timestamptz,
    content_due_at timestamptz,
    CHECK (cardinality(tag_names) = cardinality(tag_values))
);
CREATE INDEX emails_by_team ON emails (team_id, id);
CREATE INDEX emails_by_state ON emails (team_id, last_event, id);
CREATE INDEX emails_by_broadcast ON emails (broadcast_id, last_event) WHERE broadcast_id IS NOT NULL;
CREATE INDEX emails_records_due ON emails (records_due_at, id) WHERE records_due_at IS NOT NULL;
CREATE INDEX emails_content_due ON emails (content_due_at, id) WHERE content_due_at IS NOT NULL;

-- Each email's timeline, oldest first by id.
CREATE TABLE email_events (
    id uuid PRIMARY KEY,
    email_id uuid NOT NULL REFERENCES emails (id) ON DELETE CASCADE,
    kind text NOT NULL,
    created_at timestamptz NOT NULL,
    data jsonb NOT NULL
);
CREATE INDEX email_events_by_email ON email_events (email_id, id);

-- The delivery attempts an email's status keeps (the last few), in order.
CREATE TABLE email_attempts (
    email_id uuid NOT NULL REFERENCES emails (id) ON DELETE CASCADE,
    position integer NOT NULL,
    at timestamptz NOT NULL,
    recipients text[] NOT NULL,
    host text,
    ip text,
    source text,
    tls text,
    reply text NOT NULL,
    PRIMARY KEY (email_id, position)
);
