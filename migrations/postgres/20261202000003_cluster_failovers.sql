-- Cluster failover (issue #17): which nodes a failover declared dead, per epoch it made. A new
-- owner warms the slots it got from them even when a dead node has restarted (and heartbeats
-- again) before the new owner read the new configuration.
CREATE TABLE IF NOT EXISTS stmd_cluster_failovers (
    epoch   BIGINT NOT NULL,
    node_id TEXT NOT NULL,
    PRIMARY KEY (epoch, node_id)
);
