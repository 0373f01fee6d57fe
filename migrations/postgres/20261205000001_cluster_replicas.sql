-- Cluster replicas: a node may follow a primary (`primary_id`, NULL for a primary). Each node
-- reports in its heartbeat how far its replication stream has got (`repl_offset`: produced by a
-- primary, applied by a replica), so a failover promotes the replica that has the most of its
-- dead primary's writes. Additive: an existing cluster's nodes are all primaries.
ALTER TABLE stmd_cluster_nodes
    ADD COLUMN IF NOT EXISTS primary_id TEXT REFERENCES stmd_cluster_nodes (node_id) ON DELETE SET NULL;
ALTER TABLE stmd_cluster_nodes
    ADD COLUMN IF NOT EXISTS repl_offset BIGINT NOT NULL DEFAULT 0;
