"""Runs the redis-py conformance tests with pytest and writes `passed failed skipped` to the file
named by $CONF_RESULTS (for conformance/run). Skips are unsupported commands (stmd answered
`ERR unknown command`), listed by pytest's -rs summary.

`--libraries` runs the agent libraries' flows (test_libraries_*.py) instead, and `--agent-memory`
agent-memory-server's (test_agent_memory_server.py): each has a venv of its own, and both are the
part `libraries` of conformance/run; without either flag they are left out."""

import glob
import os
import sys

import pytest


class Counter:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            if report.outcome == "passed":
                self.passed += 1
            elif report.outcome == "skipped":
                self.skipped += 1
            else:
                self.failed += 1
        elif report.when == "teardown" and report.outcome == "failed":
            self.failed += 1


def main():
    counter = Counter()
    here = os.path.dirname(os.path.abspath(__file__))
    extra = sys.argv[1:]
    if "--libraries" in extra:
        extra.remove("--libraries")
        paths = sorted(glob.glob(os.path.join(here, "test_libraries_*.py")))
    elif "--agent-memory" in extra:
        extra.remove("--agent-memory")
        paths = [os.path.join(here, "test_agent_memory_server.py")]
    else:
        paths = [here, "--ignore-glob=*test_libraries_*", "--ignore-glob=*test_agent_memory_*"]
    args = ["-q", "-rs", "-p", "no:cacheprovider"] + paths
    if os.environ.get("CONF_VERBOSE"):
        args.insert(0, "-v")
    rc = pytest.main(args + extra, plugins=[counter])
    out = os.environ.get("CONF_RESULTS")
    if out:
        with open(out, "w") as f:
            f.write("%d %d %d\n" % (counter.passed, counter.failed, counter.skipped))
    return 0 if rc in (0, 5) and counter.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
