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

-- What the API answered, by team; kept for `[retention] request_logs`, which deletes by
-- the time of the request.
CREATE TABLE request_logs (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    api_key_id uuid NOT NULL,
    method text NOT NULL,
    path text NOT NULL,
    query text,
    status integer NOT NULL,
    user_agent text,
    duration_ms bigint NOT NULL,
    request_body text,
    response_body text,
    created_at timestamptz NOT NULL
);
CREATE INDEX request_logs_by_team ON request_logs (team_id, id);
CREATE INDEX request_logs_by_time ON request_logs (created_at, id);
