-- Broadcasts with their progress and their contacts' markers.

CREATE TABLE broadcasts (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    name text NOT NULL,
    segment_id uuid NOT NULL,
    from_address text NOT NULL,
    subject text NOT NULL,
    reply_to text[] NOT NULL,
    html text,
    text_body text,
    mjml text,
    preview_text text,
    topic_id uuid,
    status text NOT NULL CHECK (status IN ('draft', 'scheduled', 'sending', 'sent', 'canceled')),
    created_at timestamptz NOT NULL,
    scheduled_at timestamptz,
    sent_at timestamptz,
    finished_at timestamptz,
    cursor_contact uuid,
    total bigint NOT NULL,
    sent bigint NOT NULL,
    unsubscribed bigint NOT NULL,
    suppressed bigint NOT NULL,
    failed bigint NOT NULL,
    canceled bigint NOT NULL,
    counted boolean NOT NULL
);
CREATE INDEX broadcasts_by_team ON broadcasts (team_id, id);
-- The worker's queue: the broadcasts scheduled or sending.
CREATE INDEX broadcasts_queued ON broadcasts (id) WHERE status IN ('scheduled', 'sending');

-- One marker per contact a broadcast was expanded to.
CREATE TABLE broadcast_recipients (
    broadcast_id uuid NOT NULL REFERENCES broadcasts (id) ON DELETE CASCADE,
    contact_id uuid NOT NULL,
    team_id uuid NOT NULL,
    email text NOT NULL,
    outcome text NOT NULL CHECK (outcome IN ('sent', 'unsubscribed', 'suppressed', 'failed')),
    email_id uuid,
    reason text,
    PRIMARY KEY (broadcast_id, contact_id)
);

-- Each broadcast's emails by their current status, moved with the emails (retention
-- does not take them back: the outcomes outlive the emails' records), and the emails a
-- cancel took back. They leave with the team.
CREATE TABLE broadcast_email_counts (
    broadcast_id uuid NOT NULL,
    state text NOT NULL,
    team_id uuid NOT NULL,
    n bigint NOT NULL,
    PRIMARY KEY (broadcast_id, state)
);
CREATE INDEX broadcast_email_counts_by_team ON broadcast_email_counts (team_id);
