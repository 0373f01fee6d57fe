-- Slot migrations (issue #17, "moving slots"): `stmd cluster move-slots` records one request per
-- source node; the source node claims it (pending -> running), streams the keys of the slots to
-- the target, flips their ownership in the configuration itself, and marks the request done or
-- failed with a one-line result the admin tool prints.
CREATE TABLE IF NOT EXISTS stmd_cluster_migrations (
    id         BIGSERIAL PRIMARY KEY,
    source_id  TEXT NOT NULL,
    target_id  TEXT NOT NULL,
    slots      TEXT NOT NULL,
    state      TEXT NOT NULL DEFAULT 'pending'
               CHECK (state IN ('pending', 'running', 'done', 'failed')),
    result     TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX IF NOT EXISTS stmd_cluster_migrations_open
    ON stmd_cluster_migrations (source_id) WHERE state IN ('pending', 'running');
