# SPDX-License-Identifier: MIT
"""test_binding.py - the Python binding over gradnet.h, on one-rank jobs:
exceptions carry gradnet's message, -EDOM is NonFiniteError, stats are a
dict, buffers of torch, numpy and the buffer protocol are accepted."""
import array
import errno
import os
import socket
import sys

import numpy as np
import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
import gradnet  # noqa: E402


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ctx():
    c = gradnet.Context(rank=0, world_size=1,
                        peers="127.0.0.1:%d" % free_udp_port(), insecure=True)
    yield c
    c.close()


def test_open_error_carries_message():
    with pytest.raises(gradnet.GradnetError) as e:
        gradnet.Context(rank=3, world_size=2,
                        peers="127.0.0.1:1,127.0.0.1:2", insecure=True)
    assert e.value.errno == errno.EINVAL
    assert e.value.strerror and e.value.call == "gn_ctx_open"


def test_register_unregister_errors(ctx):
    ctx.register(5, 100, codec="3lc", average=True)
    with pytest.raises(gradnet.GradnetError) as e:
        ctx.register(5, 100)
    assert e.value.errno == errno.EEXIST and "tensor 5" in e.value.strerror
    with pytest.raises(gradnet.GradnetError) as e:
        ctx.unregister(6)
    assert e.value.errno == errno.ENOENT and "tensor 6" in str(e.value)
    x = torch.ones(100)
    ctx.start(5, x)
    with pytest.raises(gradnet.GradnetError) as e:
        ctx.unregister(5)
    assert e.value.errno == errno.EBUSY
    ctx.wait(5)
    ctx.unregister(5)
    ctx.register(5, 7, codec="none")
    y = torch.arange(7, dtype=torch.float32)
    ctx.allreduce(5, y)
    assert torch.equal(y, torch.arange(7, dtype=torch.float32))


def test_entropy_parameters_checked(ctx):
    with pytest.raises(gradnet.GradnetError) as e:
        ctx.register(3, 100, codec="qsgd", entropy="zstd", entropy_level=20)
    assert e.value.errno == errno.EINVAL
    assert "entropy_level=20" in e.value.strerror
    with pytest.raises(gradnet.GradnetError) as e:
        ctx.register(3, 100, codec="topk", entropy_level=3)
    assert "needs entropy=zstd" in e.value.strerror
    ctx.register(3, 100, codec="none", entropy="zstd")
    x = torch.ones(100)
    ctx.allreduce(3, x)
    assert torch.equal(x, torch.ones(100))


def test_nan_is_nonfinite_error(ctx):
    ctx.register(1, 64)
    x = torch.ones(64)
    x[3] = float("nan")
    with pytest.raises(gradnet.NonFiniteError) as e:
        ctx.allreduce(1, x)
    assert e.value.errno == errno.EDOM and "NaN" in e.value.strerror
    assert isinstance(e.value, gradnet.GradnetError)
    ctx.allreduce(1, torch.ones(64))       # the next step goes on


def test_buffers_and_stats(ctx):
    ctx.register(2, 8, codec="none", average=True)
    for buf in (torch.ones(8), np.ones(8, dtype=np.float32),
                array.array("f", [1.0] * 8)):
        ctx.allreduce(2, buf)
        assert list(buf) == [1.0] * 8
    with pytest.raises(TypeError):
        ctx.allreduce(2, torch.ones(8, dtype=torch.float64))
    with pytest.raises(TypeError):
        ctx.allreduce(2, torch.ones(16)[::2])
    st = ctx.stats()
    assert st["allreduces"] == 3 and isinstance(st["drops"], dict)
    assert "mac" in st["drops"]
    assert ctx.stats(tensor_id=2)["allreduces"] == 3
    with pytest.raises(gradnet.GradnetError):
        ctx.stats(tensor_id=99)


def test_closed_context_refuses(ctx):
    ctx.close()
    with pytest.raises(gradnet.GradnetError) as e:
        ctx.register(1, 4)
    assert e.value.errno == errno.EBADF


def test_bucket(ctx):
    ctx.register_bucket(9, [3, 70000, 2], codec="none", average=True)
    x = torch.arange(70005, dtype=torch.float32)
    ctx.allreduce(9, x)
    assert torch.equal(x, torch.arange(70005, dtype=torch.float32))
    assert ctx.stats(tensor_id=9)["allreduces"] == 1
    with pytest.raises(gradnet.GradnetError) as e:
        ctx.register_bucket(9, [4])
    assert e.value.errno == errno.EEXIST
    with pytest.raises(gradnet.GradnetError) as e:
        ctx.register_bucket(10, [5, 0, 6])
    assert e.value.errno == errno.EINVAL and "member 1" in e.value.strerror
    with pytest.raises(gradnet.GradnetError) as e:
        ctx.register_bucket(10, [])
    assert e.value.errno == errno.EINVAL and "0 members" in e.value.strerror
    ctx.unregister(9)
    ctx.register_bucket(9, [10, 10], codec="3lc", shared_scale=True)


def _topk_once(job, codec, **params):
    """One-rank job: tensor 3 of fc-like values through top-k, once."""
    x = np.linspace(-1, 1, 5000, dtype=np.float32) ** 3
    with gradnet.Context(rank=0, world_size=1, job_id=job, insecure=True,
                         peers="127.0.0.1:%d" % free_udp_port()) as c:
        c.register(3, x.size, codec=codec, **params)
        c.allreduce(3, x)
    return x


def test_topk_index_and_value_codecs_as_keywords():
    """Keywords reach the registry's parameters: the same job as a spec
    string gives the same bits, the result is float16 values at no more
    positions than the Bloom policy gives, and a bad one is refused with
    the parameter's name."""
    spec = "topk:density=0.25,idx=bloom-p2,fpr=0.01,val=f16"
    a = _topk_once(77, "topk", density=0.25, idx="bloom-p2", fpr=0.01,
                   val="f16")
    b = _topk_once(77, spec)
    assert a.tobytes() == b.tobytes()
    nz = a[a != 0]
    assert 0 < nz.size <= 5000 // 4
    assert np.array_equal(nz.astype(np.float16).astype(np.float32), nz)
    with gradnet.Context(rank=0, world_size=1, insecure=True,
                         peers="127.0.0.1:%d" % free_udp_port()) as c:
        with pytest.raises(gradnet.GradnetError) as e:
            c.register(4, 100, codec="topk", idx="bloom-p9")
        assert "idx" in e.value.strerror
        with pytest.raises(gradnet.GradnetError) as e:
            c.register(4, 100, codec="topk", fpr=0.01)
        assert "fpr" in e.value.strerror and "bloom" in e.value.strerror


def test_hook_state_registers_with_codec_keywords():
    """The DDP hook's state registers its buckets with the keywords it
    was given (torch.init passes them the same way)."""
    import gradnet.torch as gt
    with gradnet.Context(rank=0, world_size=1, insecure=True,
                         peers="127.0.0.1:%d" % free_udp_port()) as c:
        st = gt.GradnetState(c, codec="topk", density=0.1, idx="bloom",
                             bits=4)
        st._ensure(0, 1000)
        with pytest.raises(gradnet.GradnetError) as e:
            c.register(0, 1000, codec="topk")
        assert e.value.errno == errno.EEXIST
        bad = gt.GradnetState(c, codec="topk", idx="nope")
        with pytest.raises(gradnet.GradnetError) as e:
            bad._ensure(1, 1000)
        assert "idx" in e.value.strerror
