# SPDX-License-Identifier: MIT
"""test_staging.py - the DDP hook's staging of buckets libgradnet cannot
reduce in place (gradnet._staging), on the CPU: which buckets are staged,
the float32 round trip and its rounding, the reuse of the host buffers,
the refusal of other dtypes, and the hook on a one-rank context with
16-bit buckets. The CUDA lines cannot run here (no GPU on the test
machines); test_ddp.py runs the same path in real DDP jobs."""
import os
import socket
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
import gradnet  # noqa: E402
import gradnet.torch as gt  # noqa: E402
from gradnet._staging import BucketStaging  # noqa: E402


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Bucket:
    """What the hook reads of a torch.distributed.GradBucket."""

    def __init__(self, index, buf, sizes=None):
        self._index, self._buf = index, buf
        self._sizes = sizes or [buf.numel()]

    def index(self):
        return self._index

    def buffer(self):
        return self._buf

    def gradients(self):
        return list(self._buf.split(self._sizes))


def values(n, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, generator=g) * 3).to(dtype)


def test_only_contiguous_float32_cpu_is_reduced_in_place():
    assert not BucketStaging.needed(torch.ones(8))
    for t in (torch.ones(8, dtype=torch.float16),
              torch.ones(8, dtype=torch.bfloat16),
              torch.ones(8, dtype=torch.float64),
              torch.ones(16)[::2]):
        assert BucketStaging.needed(t)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16,
                                   torch.float64])
def test_round_trip_rounds_once_like_pytorch(dtype):
    st = BucketStaging()
    buf = values(1000, dtype)
    host = st.copy_in(4, buf)
    assert host.dtype == torch.float32 and host.device.type == "cpu"
    assert torch.equal(host, buf.to(torch.float32))
    host.mul_(1.0 / 3.0)        # what the allreduce would leave there
    want = (buf.to(torch.float32) * (1.0 / 3.0)).to(dtype)
    st.copy_out(4, host, buf)
    assert buf.dtype == dtype and torch.equal(buf, want)


def test_buffers_are_reused_and_grow_only():
    st = BucketStaging()
    a = st.copy_in(0, values(100, torch.float16))
    kept = st.buffers[0]
    for n in (100, 60, 100):
        h = st.copy_in(0, values(n, torch.float16, seed=n))
        assert h.numel() == n and h.data_ptr() == a.data_ptr()
        assert st.buffers[0] is kept
    assert st.allocations == 1
    h = st.copy_in(0, values(150, torch.bfloat16))
    assert h.numel() == 150 and st.allocations == 2
    assert st.buffers[0] is not kept
    st.copy_in(1, values(10, torch.float16))
    assert st.allocations == 3 and set(st.buffers) == {0, 1}


def test_other_dtypes_are_refused_with_the_bucket():
    with pytest.raises(TypeError) as e:
        BucketStaging().copy_in(7, torch.ones(4, dtype=torch.int32))
    assert "bucket 7" in str(e.value) and "int32" in str(e.value)


@pytest.fixture
def state():
    ctx = gradnet.Context(rank=0, world_size=1,
                          peers="127.0.0.1:%d" % free_udp_port(),
                          insecure=True)
    s = gt.GradnetState(ctx, codec="none")
    yield s
    s.close()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_hook_reduces_16_bit_buckets_through_one_buffer(state, dtype):
    kept = None
    for step in range(3):
        buf = values(3000, dtype, seed=step)
        before = buf.clone()
        got = gt.allreduce_hook(state, Bucket(2, buf)).wait()
        # One rank, dense, averaged: the values come back as they went.
        assert got is buf and torch.equal(buf, before)
        if kept is None:
            kept = state.staging.buffers[2]
        assert state.staging.buffers[2] is kept
    assert state.staging.allocations == 1


def test_hook_leaves_float32_buckets_in_place(state):
    buf = values(500, torch.float32)
    assert gt.allreduce_hook(state, Bucket(1, buf)).wait() is buf
    assert state.staging.allocations == 0 and not state.staging.buffers


def test_hook_fails_the_future_of_an_integer_bucket(state):
    fut = gt.allreduce_hook(state, Bucket(5, torch.ones(4, dtype=torch.int64)))
    with pytest.raises(TypeError) as e:
        fut.wait()
    assert "bucket 5" in str(e.value)


def test_nonfinite_16_bit_bucket_comes_back_nan(state):
    buf = values(64, torch.float16)
    buf[7] = float("inf")
    got = gt.allreduce_hook(state, Bucket(3, buf)).wait()
    assert got.dtype == torch.float16 and torch.isnan(got).all()
    assert state.nonfinite_steps == 1
    # The context goes on: the next step of the same bucket reduces.
    assert torch.isfinite(gt.allreduce_hook(
        state, Bucket(3, values(64, torch.float16))).wait()).all()
