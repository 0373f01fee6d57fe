"""redis-py's own tests for the commands stmd added since Redis 7.2, run against stmd.

The test files come from the source distribution of the redis-py version pinned in
requirements.txt (downloaded once into conformance/.cache). Each file runs in RESP2 and RESP3;
`--redis-mod-url` points at stmd too, since it serves the JSON commands built in. Writes
`passed failed skipped` to --results.
"""

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tarfile

import redis

# The files, and why each is here: the hash-field expiry commands (Redis 7.4), the JSON
# commands (RedisJSON) and the FT.* commands (RediSearch), both built into Redis 8.
FILES = [
    "tests/test_hash.py",
    "tests/test_asyncio/test_hash.py",
    "tests/test_json.py",
    "tests/test_asyncio/test_json.py",
    "tests/test_search.py",
    "tests/test_asyncio/test_search.py",
]

# Tests left out, by id (a parametrized test's every case; exact ids, see exact_deselect.py),
# each with the reason. Tests the stack reference (RediSearch 2.10.5) fails too are not listed.
DESELECT = {
    "tests/test_search.py::test_auto_complete": "FT.SUGADD/FT.SUGGET: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_asyncio/test_search.py::test_auto_complete": "FT.SUGADD/FT.SUGGET: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_search.py::test_spell_check": "FT.SPELLCHECK and FT.DICTADD: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_asyncio/test_search.py::test_spell_check": "FT.SPELLCHECK and FT.DICTADD: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_search.py::test_dict_operations": "FT.DICTADD/DICTDEL/DICTDUMP: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_asyncio/test_search.py::test_dict_operations": "FT.DICTADD/DICTDEL/DICTDUMP: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_search.py::test_synupdate": "FT.SYNUPDATE: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_asyncio/test_search.py::test_synupdate": "FT.SYNUPDATE: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_search.py::test_syndump": "FT.SYNUPDATE/FT.SYNDUMP: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_asyncio/test_search.py::test_syndump": "FT.SYNUPDATE/FT.SYNDUMP: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_search.py::test_profile": "FT.PROFILE: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_asyncio/test_search.py::test_profile": "FT.PROFILE: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_search.py::test_profile_limited": "FT.PROFILE: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_asyncio/test_search.py::test_profile_limited": "FT.PROFILE: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_search.py::test_profile_query_params": "FT.PROFILE: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_asyncio/test_search.py::test_profile_query_params": "FT.PROFILE: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_search.py::test_get": "FT.GET/FT.MGET: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_asyncio/test_search.py::test_get": "FT.GET/FT.MGET: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_search.py::test_expire": "FT.DEBUG TTL (FT.CREATE TEMPORARY's timer): not served by stmd (docs/search.md, *Not served*)",
    "tests/test_asyncio/test_search.py::test_expire": "FT.DEBUG TTL (FT.CREATE TEMPORARY's timer): not served by stmd (docs/search.md, *Not served*)",
    "tests/test_search.py::test_summarize": "SUMMARIZE/HIGHLIGHT: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_asyncio/test_search.py::test_summarize": "SUMMARIZE/HIGHLIGHT: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_search.py::test_phonetic_matcher": "PHONETIC fields: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_asyncio/test_search.py::test_phonetic_matcher": "PHONETIC fields: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_search.py::test_geoshape": "GEOSHAPE fields: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_asyncio/test_search.py::test_geoshape": "GEOSHAPE fields: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_search.py::test_geoshapes_query_contains_and_within": "GEOSHAPE fields: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_asyncio/test_search.py::test_geoshapes_query_contains_and_within": "GEOSHAPE fields: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_search.py::test_geoshapes_query_intersects_and_disjoint": "GEOSHAPE fields: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_asyncio/test_search.py::test_geoshapes_query_intersects_and_disjoint": "GEOSHAPE fields: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_search.py::test_index_definition": "FILTER expressions in FT.CREATE: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_asyncio/test_search.py::test_index_definition": "FILTER expressions in FT.CREATE: not served by stmd (docs/search.md, *Not served*)",
    "tests/test_search.py::test_scores": "WITHSCORES values are stmd's own TF-IDF figures (docs/search.md)",
    "tests/test_asyncio/test_search.py::test_scores": "WITHSCORES values are stmd's own TF-IDF figures (docs/search.md)",
    "tests/test_search.py::test_scorer": "SCORER values are stmd's own figures (docs/search.md)",
    "tests/test_asyncio/test_search.py::test_scorer": "SCORER values are stmd's own figures (docs/search.md)",
    "tests/test_search.py::test_aggregations_add_scores": "ADDSCORES gives stmd's own score figures (RediSearch: 0.2 for `*`; docs/search.md)",
    "tests/test_asyncio/test_search.py::test_aggregations_add_scores": "ADDSCORES gives stmd's own score figures (RediSearch: 0.2 for `*`; docs/search.md)",
}


def source(cache: pathlib.Path) -> pathlib.Path:
    """The unpacked sdist of the installed redis-py, downloaded on first use."""
    version = redis.__version__
    tree = cache / f"redis-{version}"
    if (tree / "tests" / "conftest.py").exists():
        return tree
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
         "--dest", str(cache), f"redis=={version}"],
        check=True,
    )
    with tarfile.open(cache / f"redis-{version}.tar.gz") as archive:
        archive.extractall(cache, filter="data")
    return tree


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", required=True)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--results", required=True)
    args = parser.parse_args()
    tree = source(pathlib.Path(args.cache))
    url = f"redis://127.0.0.1:{args.port}"
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    for protocol in ("2", "3"):
        run = subprocess.run(
            [sys.executable, "-m", "pytest", *FILES, f"--redis-url={url}", f"--redis-mod-url={url}",
             "-p", "exact_deselect",
             f"--protocol={protocol}", "-q", "-p", "no:cacheprovider", "-o", "asyncio_mode=auto",
             "-W", "ignore", "-rfEs"],
            cwd=tree, capture_output=True, text=True,
            env={**os.environ, "STMD_DESELECT": "\n".join(DESELECT),
                 "PYTHONPATH": str(pathlib.Path(__file__).parent)},
        )
        last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
        print(f"redis-py {redis.__version__} tests, RESP{protocol}: {last}")
        counts = {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|skipped|error|deselected)", last)}
        if run.returncode not in (0, 1) or not counts:
            print(run.stdout[-4000:], run.stderr[-4000:])
            counts["failed"] = counts.get("failed", 0) + 1
        elif counts.get("failed") or counts.get("error"):
            print("\n".join(line for line in run.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))))
        totals["passed"] += counts.get("passed", 0)
        totals["failed"] += counts.get("failed", 0) + counts.get("error", 0)
        totals["skipped"] += counts.get("skipped", 0) + counts.get("deselected", 0)
    pathlib.Path(args.results).write_text(f"{totals['passed']} {totals['failed']} {totals['skipped']}\n")
    return 1 if totals["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
