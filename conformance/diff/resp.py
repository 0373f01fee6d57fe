"""A small RESP2/RESP3 client for the differential runner: sends commands as multibulk requests and
reads replies as (raw bytes, parsed tree), so replies can be compared byte for byte and, where a
case asks for it, order-insensitively."""

import socket

# Reply types whose payload is one line.
LINE_TYPES = set(b"+-:_,#(")
# Reply types whose payload is a length-prefixed blob.
BLOB_TYPES = set(b"$!=")
# Aggregates: count of children (maps and attributes count pairs).
AGG_TYPES = set(b"*~>%|")


class Timeout(Exception):
    pass


class Closed(Exception):
    pass


class Reply:
    """One reply: `raw` is its exact bytes; `kind` its type byte as a str; `value` the line or blob
    (bytes) or the list of child replies; `count` the declared count (-1 for a null)."""

    __slots__ = ("raw", "kind", "value", "count")

    def __init__(self, raw, kind, value, count=None):
        self.raw = raw
        self.kind = kind
        self.value = value
        self.count = count

    def is_error(self):
        return self.kind in "-!"

    def text(self):
        return self.value if isinstance(self.value, bytes) else b""

    def __repr__(self):
        return show(self.raw)


def show(raw):
    """Printable form of raw RESP bytes: one line, with CR LF kept visible as \\r\\n."""
    out = []
    for b in raw:
        if b == 0x0D:
            out.append("\\r")
        elif b == 0x0A:
            out.append("\\n")
        elif b == 0x5C:
            out.append("\\\\")
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append("\\x%02x" % b)
    s = "".join(out)
    return s if len(s) <= 2000 else s[:2000] + "...(%d bytes)" % len(raw)


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n" % len(a))
        out.append(a)
        out.append(b"\r\n")
    return b"".join(out)


class Conn:
    def __init__(self, host, port, timeout=3.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, args):
        self.sock.sendall(encode(args))

    def call(self, args):
        self.send(args)
        return self.read()

    def _fill(self):
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            raise Timeout()
        except OSError:
            raise Closed()
        if not data:
            raise Closed()
        if self.pos > 65536:
            del self.buf[: self.pos]
            self.pos = 0
        self.buf += data

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                line = bytes(self.buf[self.pos : i])
                self.pos = i + 2
                return line
            self._fill()

    def _exact(self, n):
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        data = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n + 2
        return data

    def read(self):
        start = self.pos
        # Keep everything read for this reply in the buffer until it is complete.
        reply = self._read_one()
        return reply

    def _read_one(self):
        head = self._line()
        if not head:
            raise Closed()
        kind = head[0]
        body = head[1:]
        raw_head = head + b"\r\n"
        if kind in LINE_TYPES:
            return Reply(raw_head, chr(kind), body)
        if kind in BLOB_TYPES:
            n = int(body)
            if n < 0:
                return Reply(raw_head, chr(kind), None, n)
            data = self._exact(n)
            return Reply(raw_head + data + b"\r\n", chr(kind), data, n)
        if kind in AGG_TYPES:
            n = int(body)
            if n < 0:
                return Reply(raw_head, chr(kind), None, n)
            items = n * 2 if kind in b"%|" else n
            children = [self._read_one() for _ in range(items)]
            raw = raw_head + b"".join(c.raw for c in children)
            reply = Reply(raw, chr(kind), children, n)
            if kind == ord("|"):
                # An attribute precedes the real reply; keep both in raw, parse the reply.
                real = self._read_one()
                return Reply(raw + real.raw, real.kind, real.value, real.count)
            return reply
        raise Closed("bad reply type %r" % head[:20])
