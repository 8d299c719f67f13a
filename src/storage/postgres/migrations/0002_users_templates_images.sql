-- Users with their sessions and invitations, templates with their versions, images.
-- Ids are UUIDv7, so ordering by id is ordering by creation, as lists are.

-- The people who sign in to the dashboard. `email` is kept as given; `email_key` is the
-- address as compared (trimmed, ASCII lower case: `users::normalize`, computed by
-- herald so that both backends agree on what collides), unique across the database.
CREATE TABLE users (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    email text NOT NULL,
    email_key text NOT NULL UNIQUE,
    role text NOT NULL CHECK (role IN ('member', 'admin', 'owner')),
    -- The Argon2id PHC string; null until an invitation is taken.
    password_hash text,
    totp_secret bytea,
    -- SHA-256 digests (hex) of the recovery codes not yet used.
    recovery_codes text[] NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX users_by_team ON users (team_id, id);

-- Invitations by the SHA-256 of their token, gone with their user.
CREATE TABLE user_invitations (
    digest bytea PRIMARY KEY CHECK (octet_length(digest) = 32),
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    expires_at timestamptz
);
CREATE INDEX user_invitations_by_user ON user_invitations (user_id);

-- Dashboard sessions by the SHA-256 of their token. No foreign key to `users`: a
-- session outliving its user is ended when next used, as on RocksDB, and refusing a
-- session's write because its team is being erased would gain nothing. Erasing a team
-- deletes its sessions by `team_id`.
CREATE TABLE user_sessions (
    digest bytea PRIMARY KEY CHECK (octet_length(digest) = 32),
    team_id uuid NOT NULL,
    user_id uuid NOT NULL,
    created_at timestamptz NOT NULL,
    last_seen timestamptz NOT NULL,
    mfa_passed boolean NOT NULL,
    csrf text NOT NULL,
    -- A TOTP secret being enrolled, until a code confirms it.
    pending_totp bytea
);
CREATE INDEX user_sessions_by_team ON user_sessions (team_id);

-- Templates: what lists show. `alias_key` is the alias as compared (ASCII lower case,
-- computed by herald as the RocksDB store's key is), unique in its team; templates
-- without an alias have none (nulls never collide).
CREATE TABLE templates (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    name text NOT NULL,
    alias text,
    alias_key text,
    published_at timestamptz,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    CHECK ((alias IS NULL) = (alias_key IS NULL)),
    UNIQUE (team_id, alias_key)
);
CREATE INDEX templates_by_team ON templates (team_id, id);

-- A template's versions: its published one and its draft (position 0 each), and the
-- ones published before, newest first from position 0. Keyed by their place rather
-- than their id, which a store is not the one to keep unique.
CREATE TABLE template_versions (
    template_id uuid NOT NULL REFERENCES templates (id) ON DELETE CASCADE,
    slot text NOT NULL CHECK (slot IN ('published', 'draft', 'history')),
    position smallint NOT NULL CHECK (position >= 0),
    id uuid NOT NULL,
    sender text,
    subject text,
    reply_to text[] NOT NULL,
    html text NOT NULL,
    text text,
    mjml text,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (template_id, slot, position),
    CHECK (slot = 'history' OR position = 0)
);

-- The variables a version declares, in their order. `fallback_value` is any JSON value
-- (a string or a number today), null when there is none.
CREATE TABLE template_variables (
    template_id uuid NOT NULL,
    slot text NOT NULL,
    position smallint NOT NULL,
    ordinal smallint NOT NULL CHECK (ordinal >= 0),
    id uuid NOT NULL,
    key text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('string', 'number')),
    fallback_value jsonb,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (template_id, slot, position, ordinal),
    FOREIGN KEY (template_id, slot, position)
        REFERENCES template_versions (template_id, slot, position) ON DELETE CASCADE
);

-- Uploaded images with their bytes. Served by team and secret (the address's token);
-- listed by team, newest first. PostgreSQL keeps the bytes out of line (TOAST) once past
-- a couple of kilobytes, so a list does not read them; uncompressed (EXTERNAL), as the
-- formats taken are compressed already.
CREATE TABLE images (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    secret bytea NOT NULL CHECK (octet_length(secret) = 16),
    name text NOT NULL,
    format text NOT NULL CHECK (format IN ('png', 'jpeg', 'gif', 'webp')),
    size bigint NOT NULL CHECK (size >= 0),
    content bytea NOT NULL,
    created_at timestamptz NOT NULL,
    UNIQUE (team_id, secret)
);
ALTER TABLE images ALTER COLUMN content SET STORAGE EXTERNAL;
CREATE INDEX images_by_team ON images (team_id, id);
