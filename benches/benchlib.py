"""What benches/compare and benches/capture_cost share: ports, tools, redis-cli, and the capture
both measure (10 MSG of 300 bytes and one REPLY, on stmd as STM.CAPTURE and on Redis as EVALSHA of
benches/stm_capture_redis.lua)."""

import ast
import functools
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LUA = os.path.join(ROOT, "benches", "stm_capture_redis.lua")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_packages(tools):
    """Installs with apt-get the Debian package of each tool (name → package) not on the PATH."""
    missing = sorted({package for tool, package in tools.items() if not shutil.which(tool)})
    if missing:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True, env=env)


def cli(port, *args):
    out = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def wait_up(port, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if cli(port, "PING") == "PONG":
                return
        except subprocess.CalledProcessError:
            pass
        time.sleep(0.05)
    sys.exit(f"server on port {port} did not start")


def resp(commands):
    """Commands (lists of str/int/bytes arguments) as one RESP stream."""
    out = bytearray()
    for args in commands:
        out += b"*%d\r\n" % len(args)
        for arg in args:
            data = arg if isinstance(arg, bytes) else str(arg).encode()
            out += b"$%d\r\n%s\r\n" % (len(data), data)
    return bytes(out)


def pipe(port, commands):
    """Sends many commands at once through `redis-cli --pipe`; exits when any failed."""
    done = subprocess.run(["redis-cli", "-p", str(port), "--pipe"], input=resp(commands), capture_output=True,
                          check=True)
    if b"errors: 0" not in done.stdout:
        sys.exit(f"pipe to port {port} failed: {done.stdout.decode(errors='replace')}")


def message(i):
    return (f"message {i} " + "x" * 300)[:300]


def stm_capture(user, channel="c1", texts=None):
    """STM.CAPTURE of the measured turn into user `user`'s conversation `channel` on server s1:
    10 MSG and one REPLY, `texts` (11 of them) or message(0..9) and message(99)."""
    texts = texts or [message(i) for i in (*range(10), 99)]
    args = ["STM.CAPTURE", "USER", user, "CHANNEL", channel, "SERVER", "s1"]
    for text in texts[:10]:
        args += ["MSG", "user", "-", text]
    return args + ["REPLY", "1", "-", "-", texts[10]]


def lua_capture(sha, user, texts=None):
    """The same turn through EVALSHA of the Lua capture loaded as `sha`."""
    texts = texts or [message(i) for i in (*range(10), 99)]
    return ["EVALSHA", sha, "2", f"shortterm:user:{user}:c1:1", "shortterm:server:s1:c1:1", *texts]


@functools.lru_cache(maxsize=1)
def sentences():
    """Real English prose that needs no network: the sentences of the docstrings in the Python
    standard library's own modules (read with `ast`, not imported), in a fixed order. Only plain
    ASCII sentences of 30 to 240 bytes that read as prose (mostly letters and spaces, no doctest or
    markup) are kept; the same Python version gives the same list."""
    stdlib = os.path.dirname(os.__file__)
    out = []
    for name in sorted(os.listdir(stdlib)):
        if not name.endswith(".py"):
            continue
        try:
            with open(os.path.join(stdlib, name), encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            doc = ast.get_docstring(node)
            if not doc or ">>>" in doc:
                continue
            for sentence in re.split(r"(?<=[.!?])\s+", " ".join(doc.split())):
                letters = sum(c.isalpha() or c == " " for c in sentence)
                if (30 <= len(sentence) <= 240 and sentence.isascii() and sentence[0].isupper()
                        and sentence[-1] in ".!?" and letters >= 0.92 * len(sentence)
                        and not any(mark in sentence for mark in ("::", "`", "__", "=", "*"))):
                    out.append(sentence)
    return out


def chat_texts(seed, count=11, size=300):
    """`count` chat messages of `size` bytes for conversation `seed`: random sentences of
    sentences() (a generator seeded with `seed`, so a run is reproducible and every conversation
    differs) joined until the message is full, cut at `size`."""
    rng = random.Random(seed)
    pool = sentences()
    texts = []
    for _ in range(count):
        text = ""
        while len(text) < size:
            text += rng.choice(pool) + " "
        texts.append(text[:size].rstrip() or text[:size])
    return texts
