-- Webhook messages and their attempts (the events not yet fanned out stay in the node's outbox).

-- One message per event and webhook, keyed as the API names it. The primary key serves
-- a webhook's list, newest first by event id. `body` is `json`, not `jsonb`: it is kept
-- as the text that is signed and sent on every attempt, byte for byte, while `jsonb`
-- would reorder its keys. `due_at` is the dispatcher's queue: the next attempt of a
-- pending message, set by every write, null once final, and cleared when the
-- dispatcher drops its entry (the message keeping its own `next_attempt`). Retention
-- counts from `finished_at`, once the message is final.
CREATE TABLE webhook_messages (
    team_id uuid NOT NULL,
    webhook_id uuid NOT NULL,
    event_id uuid NOT NULL,
    kind text NOT NULL,
    body json NOT NULL,
    attempts integer NOT NULL CHECK (attempts >= 0),
    state text NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),
    next_attempt timestamptz NOT NULL,
    attempt_ids uuid[] NOT NULL,
    finished_at timestamptz,
    due_at timestamptz,
    PRIMARY KEY (team_id, webhook_id, event_id),
    CHECK (due_at IS NULL OR state = 'pending')
);
CREATE INDEX webhook_messages_due ON webhook_messages (due_at, team_id, webhook_id, event_id)
    WHERE due_at IS NOT NULL;
CREATE INDEX webhook_messages_finished ON webhook_messages (finished_at, team_id, webhook_id, event_id)
    WHERE finished_at IS NOT NULL AND state <> 'pending';

-- Each attempt to deliver a message, as the request log lists it: by webhook, newest
-- first. Not tied to its message's row: an attempt stays when its message is removed
-- with its endpoint, and leaves by its own time.
CREATE TABLE webhook_attempts (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    webhook_id uuid NOT NULL,
    event_id uuid NOT NULL,
    kind text NOT NULL,
    attempt integer NOT NULL CHECK (attempt >= 0),
    status integer,
    error text,
    response text NOT NULL,
    latency_ms bigint NOT NULL,
    at timestamptz NOT NULL
);
CREATE INDEX webhook_attempts_by_webhook ON webhook_attempts (team_id, webhook_id, id);
CREATE INDEX webhook_attempts_by_time ON webhook_attempts (at, team_id, webhook_id, id);
