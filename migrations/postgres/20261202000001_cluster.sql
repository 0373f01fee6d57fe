-- Cluster mode (issue #17): Postgres is the coordinator. The nodes that registered, and the one
-- configuration: an epoch and the owner of each slot range. Admin tools change the configuration
-- in one transaction that bumps the epoch and notifies the channel `stmd_cluster`.
CREATE TABLE IF NOT EXISTS stmd_cluster_nodes (
    node_id        TEXT PRIMARY KEY CHECK (node_id ~ '^[0-9a-f]{40}$'),
    ip             TEXT NOT NULL,
    port           INTEGER NOT NULL CHECK (port BETWEEN 1 AND 65535),
    last_heartbeat TIMESTAMPTZ NOT NULL DEFAULT now(),
    registered_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS stmd_cluster_config (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    epoch      BIGINT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

INSERT INTO stmd_cluster_config (id, epoch) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;

-- Inclusive ranges; together they are the slot map of the configuration's epoch.
CREATE TABLE IF NOT EXISTS stmd_cluster_slots (
    slot_start INTEGER PRIMARY KEY CHECK (slot_start BETWEEN 0 AND 16383),
    slot_end   INTEGER NOT NULL CHECK (slot_end BETWEEN slot_start AND 16383),
    node_id    TEXT NOT NULL REFERENCES stmd_cluster_nodes (node_id)
);
