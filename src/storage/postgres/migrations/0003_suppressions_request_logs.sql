-- Suppressed addresses and the API's request logs.

-- One entry per team and address (lower case, trimmed): what delivery checks before it
-- connects. Adding an address again replaces its entry.
CREATE TABLE suppressions (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    email text NOT NULL,
    origin text NOT NULL CHECK (origin IN ('bounce', 'complaint', 'manual')),
    source_id uuid,
    created_at timestamptz NOT NULL,
    UNIQUE (team_id, email)
);
CREATE INDEX suppressions_by_team ON suppressions (team_id, id);
CREATE INDEX suppressions_by_origin ON suppressions (team_id, origin, id);
