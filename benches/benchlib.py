"""What benches/compare and benches/capture_cost share: ports, tools, redis-cli, and the capture
both measure (10 MSG of 300 bytes and one REPLY, on stmd as STM.CAPTURE and on Redis as EVALSHA of
benches/stm_capture_redis.lua)."""

import os
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


def stm_capture(user, channel="c1"):
    """STM.CAPTURE of the measured turn into user `user`'s conversation `channel` on server s1."""
    args = ["STM.CAPTURE", "USER", user, "CHANNEL", channel, "SERVER", "s1"]
    for i in range(10):
        args += ["MSG", "user", "-", message(i)]
    return args + ["REPLY", "1", "-", "-", message(99)]


def lua_capture(sha, user):
    """The same turn through EVALSHA of the Lua capture loaded as `sha`."""
    return ["EVALSHA", sha, "2", f"shortterm:user:{user}:c1:1", "shortterm:server:s1:c1:1",
            *(message(i) for i in range(10)), message(99)]
