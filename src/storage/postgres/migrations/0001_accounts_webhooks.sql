-- Teams, API keys and webhooks: the records every request reads.
-- Ids are UUIDv7, so ordering by id is ordering by creation, as lists are.

-- Facts about the database as a whole, one row each ('initialised': the operator's team
-- and its first key were made, once for every node).
CREATE TABLE herald_meta (
    name text PRIMARY KEY,
    team_id uuid,
    at timestamptz NOT NULL
);

CREATE TABLE teams (
    id uuid PRIMARY KEY,
    name text NOT NULL,
    operator boolean NOT NULL,
    created_at timestamptz NOT NULL,
    rate_limit text,
    plan text,
    deleted_at timestamptz
);

CREATE TABLE api_keys (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    name text NOT NULL,
    permission text NOT NULL CHECK (permission IN ('full_access', 'sending_access')),
    domain_id uuid,
    -- SHA-256 of the token: what a request authenticates with.
    digest bytea NOT NULL UNIQUE CHECK (octet_length(digest) = 32),
    created_at timestamptz NOT NULL,
    last_used_at timestamptz
);
CREATE INDEX api_keys_by_team ON api_keys (team_id, id);

-- When each key last authenticated a request: written on every request, so apart from
-- the key's row (which it would otherwise rewrite each time), and gone with the key.
CREATE TABLE api_key_uses (
    key_id uuid PRIMARY KEY REFERENCES api_keys (id) ON DELETE CASCADE,
    last_used_at timestamptz NOT NULL
);

CREATE TABLE webhooks (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    endpoint text NOT NULL,
    events text[] NOT NULL,
    enabled boolean NOT NULL,
    signing_secret text NOT NULL,
    previous_secret text,
    previous_secret_until timestamptz,
    created_at timestamptz NOT NULL,
    CHECK ((previous_secret IS NULL) = (previous_secret_until IS NULL))
);
CREATE INDEX webhooks_by_team ON webhooks (team_id, id);
