"""redis-py's RedisCluster against a running stmd cluster: plain and STM commands routed by the
client itself (STM commands through COMMAND GETKEYS), and no MOVED once the slot map is known.

    python cluster_client.py 127.0.0.2:7000

Run by tests/integration/cluster_mode.rs with a Python that has redis-py (conformance/.venv, or the one named
by STMD_CLUSTER_PYTHON). Exits non-zero with the failed check on stderr.
"""

import sys

from redis.cluster import RedisCluster


def moved_total(rc):
    return sum(
        int(info.get("cluster_moved_redirections", 0))
        for info in rc.info("cluster", target_nodes=RedisCluster.ALL_NODES).values()
    )


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    rc = RedisCluster(host=host, port=int(port), decode_responses=True)
    assert len(rc.get_nodes()) == 3, rc.get_nodes()

    # Plain commands over many slots, multi-key commands within a hash tag, a pipeline.
    for i in range(200):
        assert rc.set(f"py:{i}", i)
    assert [rc.get(f"py:{i}") for i in range(200)] == [str(i) for i in range(200)]
    assert rc.mset({"{tag}a": "1", "{tag}b": "2"})
    assert rc.mget("{tag}a", "{tag}b") == ["1", "2"]
    pipe = rc.pipeline()
    for i in range(50):
        pipe.incr(f"counter:{i}")
    assert pipe.execute() == [1] * 50

    # STM: a bot's turn, summary and read, each routed to its channel's node.
    before = moved_total(rc)
    for channel in range(30):
        keys = rc.execute_command(
            "STM.CAPTURE", "USER", "u1", "CHANNEL", f"c{channel}", "SERVER", "s1",
            "MSG", "user", "-", f"hello {channel}", "REPLY", "3", "-", "-", f"hi {channel}",
        )
        assert keys == [f"shortterm:user:u1:{{c{channel}}}:3", f"shortterm:server:s1:{{c{channel}}}:3"], keys
        assert rc.execute_command(
            "STM.SUMMARY", "USER", "u1", "CHANNEL", f"c{channel}", "SERVER", "s1",
            "PERSONA", "3", "TEXT", f"summary {channel}",
        ) is not None
        entry = rc.execute_command("STM.GET", f"shortterm:user:u1:{{c{channel}}}:3", "FORMAT", "JSON")
        assert f"summary {channel}" in entry, entry
        assert rc.execute_command("STM.TICK", f"shortterm:server:s1:{{c{channel}}}:3") == 1
        context = rc.execute_command(
            "STM.CONTEXT", "USER", "u1", "CHANNEL", f"c{channel}", "SERVER", "s1",
            "PERSONA", "3", "FORMAT", "JSON",
        )
        assert f"summary {channel}" in context, context
    # Forget half the channels (their rows too); the rest stay for the restart checks.
    for channel in range(15):
        assert rc.execute_command("STM.FORGET", "CHANNEL", f"c{channel}") >= 2
        assert rc.execute_command("STM.GET", f"shortterm:user:u1:{{c{channel}}}:3") is None
    moved = moved_total(rc) - before
    assert moved == 0, f"{moved} MOVED redirections for STM calls after warm-up"
    print("redis-py RedisCluster: plain and STM commands routed without MOVED")


if __name__ == "__main__":
    main()
