-- Contacts with their properties, segments, topics and imports.
-- Ids are UUIDv7, so ordering by id is ordering by creation, as lists are.
--
-- A contact names segments, topics and properties that may be gone: deleting one does
-- not rewrite the records that name it (there may be millions), readers ignore what is
-- gone and the contact's next write drops it. So nothing a contact holds has a foreign
-- key to the team's segments, topics or property definitions; what cannot outlive the
-- contact itself goes with it (ON DELETE CASCADE).

-- A team's contacts. `email` is kept as written; `email_key` is the address as compared
-- (the domain part lower-cased, the local part as written: `contacts::normalize`,
-- computed by herald as the RocksDB store's key is), unique in its team. `segments` is
-- the record's own list, in the order the contact joined them, deleted ones included
-- until its next write; `segment_members` is the index that pages a segment.
CREATE TABLE contacts (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    email text NOT NULL,
    email_key text NOT NULL,
    first_name text,
    last_name text,
    unsubscribed boolean NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    segments uuid[] NOT NULL,
    UNIQUE (team_id, email_key)
);
CREATE INDEX contacts_by_team ON contacts (team_id, id);

-- How many contacts each team has, moved in the transaction that inserts or deletes
-- them, so that counting a team of millions reads one row.
CREATE TABLE contact_counts (
    team_id uuid PRIMARY KEY,
    contacts bigint NOT NULL
);

-- Each segment's members by team and segment, paged newest first by contact id. Deleting
-- a segment deletes its entries, and the contacts stay.
CREATE TABLE segment_members (
    team_id uuid NOT NULL,
    segment_id uuid NOT NULL,
    contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    PRIMARY KEY (team_id, segment_id, contact_id)
);
CREATE INDEX segment_members_by_contact ON segment_members (contact_id);

-- A contact's own topic choices, in its order; a topic it never chose follows the
-- topic's default.
CREATE TABLE contact_topics (
    contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    position integer NOT NULL CHECK (position >= 0),
    topic_id uuid NOT NULL,
    subscription text NOT NULL CHECK (subscription IN ('opt_in', 'opt_out')),
    PRIMARY KEY (contact_id, position)
);

-- A contact's custom property values by property id (not key: a property deleted and
-- made again under the same key starts empty). A value is any JSON value (strings and
-- numbers, checked against the team's definitions when written).
CREATE TABLE contact_property_values (
    contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
    property_id uuid NOT NULL,
    value jsonb NOT NULL,
    PRIMARY KEY (contact_id, property_id)
);

-- A team's segments, topics and property definitions: small collections, each bounded
-- by a `[contacts]` limit.
CREATE TABLE segments (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    name text NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX segments_by_team ON segments (team_id, id);

CREATE TABLE topics (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    name text NOT NULL,
    description text,
    default_subscription text NOT NULL CHECK (default_subscription IN ('opt_in', 'opt_out')),
    visibility text NOT NULL CHECK (visibility IN ('public', 'private')),
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX topics_by_team ON topics (team_id, id);

-- `fallback_value` is any JSON value (a string or a number today), null when there is none.
CREATE TABLE contact_properties (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    key text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('string', 'number')),
    fallback_value jsonb,
    created_at timestamptz NOT NULL
);
CREATE INDEX contact_properties_by_team ON contact_properties (team_id, id);

-- Imports of CSV files: where each is (`next_offset` and `next_line` are of the next row
-- to read), what its rows came to, which column holds which field (positions in a row),
-- and what every imported contact joins and chooses. `expires_from` is the retention's
-- queue (`[retention] imports`): its `completed_at` once finished, null until then.
-- The worker takes the unfinished ones oldest first, every team's.
CREATE TABLE contact_imports (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    status text NOT NULL CHECK (status IN ('queued', 'in_progress', 'completed', 'failed')),
    created_at timestamptz NOT NULL,
    completed_at timestamptz,
    rows_total bigint NOT NULL,
    rows_created bigint NOT NULL,
    rows_updated bigint NOT NULL,
    rows_skipped bigint NOT NULL,
    rows_failed bigint NOT NULL,
    email_column integer NOT NULL CHECK (email_column >= 0),
    first_name_column integer CHECK (first_name_column >= 0),
    last_name_column integer CHECK (last_name_column >= 0),
    unsubscribed_column integer CHECK (unsubscribed_column >= 0),
    on_conflict text NOT NULL CHECK (on_conflict IN ('upsert', 'skip')),
    segments uuid[] NOT NULL,
    topic_ids uuid[] NOT NULL,
    topic_subscriptions text[] NOT NULL,
    next_offset bigint NOT NULL,
    next_line bigint NOT NULL,
    failure text,
    expires_from timestamptz,
    CHECK (cardinality(topic_ids) = cardinality(topic_subscriptions))
);
CREATE INDEX contact_imports_by_team ON contact_imports (team_id, id);
CREATE INDEX contact_imports_unfinished ON contact_imports (id) WHERE status IN ('queued', 'in_progress');
CREATE INDEX contact_imports_expiry ON contact_imports (expires_from, id) WHERE expires_from IS NOT NULL;

-- The property columns of an import, in their order: which property each holds, at
-- which position in a row, and whether its cells are booleans (kept as `true` or
-- `false`).
CREATE TABLE contact_import_columns (
    import_id uuid NOT NULL REFERENCES contact_imports (id) ON DELETE CASCADE,
    ordinal integer NOT NULL CHECK (ordinal >= 0),
    property_id uuid NOT NULL,
    key text NOT NULL,
    position integer NOT NULL CHECK (position >= 0),
    kind text NOT NULL CHECK (kind IN ('string', 'number')),
    booleans boolean NOT NULL,
    PRIMARY KEY (import_id, ordinal)
);

-- The rows an import refused, by their place among the file's rows (the first after the
-- header is 1), paged in file order; gone with their import.
CREATE TABLE contact_import_errors (
    import_id uuid NOT NULL REFERENCES contact_imports (id) ON DELETE CASCADE,
    row_number bigint NOT NULL,
    line bigint NOT NULL,
    reason text NOT NULL,
    PRIMARY KEY (import_id, row_number)
);
