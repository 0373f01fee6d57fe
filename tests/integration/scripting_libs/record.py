#!/usr/bin/env python3
"""Records what a real redis-server returns for every case in cases.txt.

Usage: record.py PORT  (a redis-server 7 listening on 127.0.0.1:PORT)

Each case's snippet runs as `EVAL <prelude + snippet> 0`; the reply (always a bulk string: the
snippets render their results with the prelude's helpers) is written on the case's `=>` line.
tests/scripting_libs.rs runs the same scripts through stmd's Lua libraries and compares.
"""
import os
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def command(sock, reader, *args):
    out = b"*%d\r\n" % len(args)
    for arg in args:
        out += b"$%d\r\n%s\r\n" % (len(arg), arg)
    sock.sendall(out)
    line = reader.readline().rstrip(b"\r\n")
    kind, rest = line[:1], line[1:]
    if kind == b"$":
        length = int(rest)
        if length < 0:
            return "NIL"
        data = reader.read(length + 2)[:-2]
        return data.decode("latin-1")
    if kind == b"-":
        return "ERROR " + rest.decode("latin-1")
    return "REPLY " + line.decode("latin-1")


def parse_cases(text):
    """(name, snippet) pairs from blank-line separated blocks with a `# name` first line."""
    cases = []
    for block in text.split("\n\n"):
        lines = [l for l in block.strip("\n").split("\n") if l]
        if not lines or not lines[0].startswith("# ") or len(lines) < 2:
            continue
        body = [l for l in lines[1:] if not l.startswith("=>")]
        if not body or body[0].startswith("# "):
            continue
        cases.append((lines[0][2:], "\n".join(body)))
    return cases


def main():
    port = int(sys.argv[1])
    prelude = open(os.path.join(HERE, "prelude.lua")).read()
    path = os.path.join(HERE, "cases.txt")
    text = open(path).read()
    header = text.split("\n\n")[0]
    sock = socket.create_connection(("127.0.0.1", port))
    reader = sock.makefile("rb")
    blocks = [header]
    for name, snippet in parse_cases(text):
        script = (prelude + snippet).encode("latin-1")
        reply = command(sock, reader, b"EVAL", script, b"0")
        if "\n" in reply or "\r" in reply:
            raise SystemExit(f"{name}: reply has a line break: {reply!r}")
        blocks.append(f"# {name}\n{snippet}\n=> {reply}")
    open(path, "w").write("\n\n".join(blocks) + "\n")
    print(f"recorded {len(blocks) - 1} cases")


main()
