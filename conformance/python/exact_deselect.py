"""A pytest plugin for redis_py_suite.py: leaves out the tests named in the environment variable
STMD_DESELECT (one node id a line), matched exactly, a parametrized test by its id without the
`[…]` part. pytest's own --deselect matches prefixes, which would also drop `test_expire_while_search`
with `test_expire`."""

import os


def pytest_collection_modifyitems(config, items):
    wanted = {line for line in os.environ.get("STMD_DESELECT", "").splitlines() if line}
    if not wanted:
        return
    kept, dropped = [], []
    for item in items:
        (dropped if item.nodeid.split("[")[0] in wanted else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
