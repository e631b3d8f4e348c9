# SPDX-License-Identifier: MIT
"""test_transport.py - Context(transport=...) reaches gn_ctx_opts.transport:
"udp" opens and reduces (one rank, and two ranks in two threads), it wins
over GN_TRANSPORT, and an unknown name raises with the library's message."""
import ctypes
import errno
import os
import re
import socket
import sys
import threading

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
import gradnet  # noqa: E402
from gradnet import _lib  # noqa: E402


def free_udp_ports(n):
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _c_fields(struct):
    """The field names of struct @struct of gradnet.h, in order."""
    hdr = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                       "include", "gradnet", "gradnet.h")
    text = open(hdr).read()
    body = re.search(r"struct %s \{(.*?)\};" % struct, text, re.S).group(1)
    return [re.findall(r"\**(\w+)(?:\[\w+\])?;", line)[0]
            for line in body.splitlines() if line.strip().endswith(";")]


def test_ctypes_structs_mirror_gradnet_h():
    # The binding's structs are gradnet.h's, field by field, to their end
    # (a field left out would shift every later one).
    for cls, struct in ((_lib.CtxOpts, "gn_ctx_opts"),
                        (_lib.TensorOpts, "gn_tensor_opts"),
                        (_lib.BucketOpts, "gn_bucket_opts"),
                        (_lib.ModelOpts, "gn_model_opts")):
        assert [f[0] for f in cls._fields_] == _c_fields(struct), struct


def test_udp_one_rank(monkeypatch):
    # The keyword, not the environment, picks the path: a GN_TRANSPORT the
    # library would refuse shows that the field was read.
    monkeypatch.setenv("GN_TRANSPORT", "carrier-pigeon")
    port, = free_udp_ports(1)
    c = gradnet.Context(rank=0, world_size=1, peers="127.0.0.1:%d" % port,
                        insecure=True, transport="udp")
    try:
        c.register(1, 5, codec="none")
        x = torch.arange(5, dtype=torch.float32)
        c.allreduce(1, x)
        assert torch.equal(x, torch.arange(5, dtype=torch.float32))
    finally:
        c.close()


def two_ranks(body):
    """body(rank, context) on two UDP ranks on loopback, one thread each;
    their results, once both are done."""
    peers = ",".join("127.0.0.1:%d" % p for p in free_udp_ports(2))
    out, errs = [None, None], []

    def rank(r):
        try:
            c = gradnet.Context(rank=r, world_size=2, peers=peers,
                                insecure=True, timeout_ms=20000,
                                transport="udp")
            try:
                out[r] = body(r, c)
            finally:
                c.close()
        except Exception as e:      # reported by the main thread
            errs.append(e)

    ts = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not any(t.is_alive() for t in ts)
    assert not errs, errs
    return out


def test_udp_two_ranks(monkeypatch):
    monkeypatch.delenv("GN_TRANSPORT", raising=False)

    def body(r, c):
        c.register(7, 1000, codec="none")
        x = torch.full((1000,), float(r + 1))
        c.allreduce(7, x)
        return x

    for x in two_ranks(body):
        assert torch.equal(x, torch.full((1000,), 3.0))


def test_entropy_stage_two_ranks(monkeypatch):
    # The stage's keywords reach the library: a 3LC tensor with it ends
    # with the same values as one without, and sends fewer bytes.
    monkeypatch.delenv("GN_TRANSPORT", raising=False)

    def body(r, c):
        c.register(7, 300000, codec="3lc")
        c.register(8, 300000, codec="3lc", entropy="zstd", entropy_level=2)
        g = torch.Generator().manual_seed(11 + r)
        x = torch.randn(300000, generator=g) ** 3
        y = x.clone()
        c.allreduce(7, x)
        c.allreduce(8, y)
        return x, y, (c.stats(tensor_id=7)["wire_bytes"],
                      c.stats(tensor_id=8)["wire_bytes"])

    out = two_ranks(body)
    for x, y, wire in out:
        assert torch.equal(x, y)
        assert torch.equal(y, out[0][1])
        assert wire[1] < wire[0], wire


def test_unknown_transport_raises(monkeypatch):
    monkeypatch.delenv("GN_TRANSPORT", raising=False)
    port, = free_udp_ports(1)
    with pytest.raises(gradnet.GradnetError) as e:
        gradnet.Context(rank=0, world_size=1, peers="127.0.0.1:%d" % port,
                        insecure=True, transport="rdma")
    assert e.value.errno == errno.EINVAL
    assert e.value.call == "gn_ctx_open"
    assert 'transport "rdma"' in e.value.strerror
    assert "use udp or dpdk" in e.value.strerror
