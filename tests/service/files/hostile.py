"""Hostile: probes the network, the environment and the host's files, then hogs memory."""
import os
import socket

found = []
try:
    socket.create_connection(("127.0.0.1", 6379), timeout=1).close()
    found.append("NETWORK-OPEN")
except OSError as exc:
    found.append(f"no network ({type(exc).__name__})")
found.append("env=" + repr(dict(os.environ)))
for path in ("/work", "/etc/shadow", "/root", "/proc/1/environ"):
    try:
        with open(path, "rb") as fh:
            found.append(f"READ {path}: {fh.read(200)!r}")
    except OSError as exc:
        found.append(f"cannot read {path} ({type(exc).__name__})")
print("\n".join(found), flush=True)


class Value:
    def __init__(self, data):
        self.data = data
        self.grad = 0.0

    def __add__(self, other):
        return Value(self.data + other.data)

    def __mul__(self, other):
        return Value(self.data * other.data)

    def tanh(self):
        return Value(self.data)

    def backward(self):
        hog = []
        while True:  # until the sandbox's memory limit stops it
            hog.append(bytearray(64 * 1024 * 1024))
