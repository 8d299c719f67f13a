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

-- Sending domains with their DKIM keys and the state of their DNS records. `check_due_at`
-- is the verifier's queue: set to `next_check_at` by every write, cleared when the
-- verifier drops an entry (the domain keeping its own `next_check_at`).
CREATE TABLE domains (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    name text NOT NULL,
    region text NOT NULL,
    custom_return_path text NOT NULL,
    open_tracking boolean NOT NULL,
    click_tracking boolean NOT NULL,
    tls text NOT NULL,
    tracking_subdomain text,
    dkim_selector text NOT NULL,
    dkim_algorithm text NOT NULL,
    dkim_private_pkcs8 text NOT NULL,
    dkim_public text NOT NULL,
    check_dkim text NOT NULL,
    check_spf_txt text NOT NULL,
    check_spf_mx text NOT NULL,
    check_dmarc text NOT NULL,
    check_tracking text NOT NULL,
    status text NOT NULL,
    dns_verification_skipped boolean NOT NULL,
    created_at timestamptz NOT NULL,
    verification_started_at timestamptz,
    last_checked_at timestamptz,
    next_check_at timestamptz,
    check_due_at timestamptz,
    failed_checks integer NOT NULL,
    UNIQUE (team_id, name)
);
CREATE INDEX domains_by_team ON domains (team_id, id);
CREATE INDEX domains_by_check ON domains (check_due_at, id) WHERE check_due_at IS NOT NULL;
