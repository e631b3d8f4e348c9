# SPDX-License-Identifier: MIT
"""_staging.py - float32 host buffers for the DDP buckets that libgradnet
cannot reduce in place: buckets on a CUDA device, and float16, bfloat16 or
float64 buckets (mixed precision, or a model kept in another dtype).

libgradnet reads and writes contiguous float32 host memory. Such a bucket
is copied into a float32 host buffer of its own on the bucket's stream,
allreduced there, and copied back on the same stream before the hook's
Future completes, so DDP sees its bucket reduced in its own dtype, on its
own device. Values are rounded once, on the way back, by PyTorch's own
float32 conversion (round to nearest even), identically on every rank.

The buffers are kept per bucket index and reused step after step: one is
allocated when an index first comes, or when its bucket outgrows it (DDP
rebuilds its buckets once, after the first iteration). For CUDA buckets
they are pinned, so that both copies are plain DMA; pinning is asked for
only for a bucket on a CUDA device, which exists only when CUDA does.
CPU float32 buckets are not staged: libgradnet reduces them in place.
"""
import contextlib

import torch

__all__ = ["BucketStaging"]

_STAGED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


class BucketStaging:
    """The staging buffers of one DDP model's buckets, by bucket index."""

    def __init__(self):
        self.buffers = {}       # bucket index -> float32 host tensor
        self.allocations = 0    # buffers allocated so far (tests read it)
        self._copied_out = {}   # bucket index -> CUDA event of the last copy back

    @staticmethod
    def needed(buf):
        """Whether buf must be staged: anything but contiguous float32 on
        the CPU, which libgradnet reduces in place."""
        return not (buf.device.type == "cpu" and buf.dtype == torch.float32
                    and buf.is_contiguous())

    def _host(self, tid, n, pinned):
        have = self.buffers.get(tid)
        if have is None or have.numel() < n or have.is_pinned() != pinned:
            have = torch.empty(n, dtype=torch.float32, pin_memory=pinned)
            self.buffers[tid] = have
            self.allocations += 1
        return have[:n]

    def copy_in(self, tid, buf):
        """Copy bucket buf into its float32 host buffer and return that
        buffer's first numel() elements, ready for gn_allreduce_start().
        Raises TypeError for a dtype the hook cannot reduce."""
        if buf.dtype not in _STAGED_DTYPES:
            raise TypeError("gradnet: bucket %d is %s; the hook reduces "
                            "float16, bfloat16, float32 and float64 buckets"
                            % (tid, buf.dtype))
        src = buf.detach().reshape(-1)
        cuda = src.device.type == "cuda"
        host = self._host(tid, src.numel(), pinned=cuda)
        if cuda:
            # The host buffer is free once the last copy back has run.
            done = self._copied_out.pop(tid, None)
            if done is not None:
                done.synchronize()
            # Convert on the device, so that the DMA moves float32 into
            # the pinned buffer without a pageable temporary; a blocking
            # copy on the current (the bucket's) stream returns once the
            # gradients and the copy are done.
            src = src.float()
        host.copy_(src)
        return host

    @staticmethod
    def stream(buf):
        """The stream the bucket's copies run on: the current stream of its
        CUDA device when the hook runs (None on the CPU). The waiter thread
        enters it with on_stream()."""
        if buf.device.type != "cuda":
            return None
        return torch.cuda.current_stream(buf.device)

    @staticmethod
    def on_stream(stream):
        """A context that makes stream current (nothing for None)."""
        if stream is None:
            return contextlib.nullcontext()
        return torch.cuda.stream(stream)

    def copy_out(self, tid, host, out):
        """Copy the reduced float32 host values into bucket out, rounding
        them to its dtype; call it inside on_stream() of the bucket's
        stream, before the Future completes."""
        dst = out.view(-1)
        if dst.device.type != "cuda":
            dst.copy_(host)
            return
        src = host
        if dst.dtype != torch.float32:
            # DMA float32 from the pinned buffer, then round on the device.
            src = host.to(dst.device, non_blocking=True)
        dst.copy_(src, non_blocking=True)
        done = torch.cuda.Event()
        done.record()
        self._copied_out[tid] = done
