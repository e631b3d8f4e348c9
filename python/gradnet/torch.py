# SPDX-License-Identifier: MIT
"""gradnet.torch - a DistributedDataParallel communication hook over gradnet.

    import gradnet.torch
    dist.init_process_group("gloo")                 # torchrun's variables
    model = DDP(net)
    state = gradnet.torch.init()                    # opens the gradnet context
    model.register_comm_hook(state, gradnet.torch.allreduce_hook)

Like PyTorch's own hooks (ddp_comm_hooks/default_hooks.py), a state object
plus a hook that takes a GradBucket and returns a Future. The hook starts
the bucket's allreduce (gn_allreduce_start() compresses it in the calling
thread, without the GIL) and returns at once; a waiter thread sits in
gn_allreduce_wait(), also without the GIL, and completes the Future, so the
backward pass goes on while gradients travel. Each bucket index is one
gradnet tensor; when DDP rebuilds its buckets (after the first iteration)
and a bucket's size changes, every rank unregisters and registers it again.
With member_scales=True each DDP bucket is a gradnet bucket whose members
are its gradients (gn_bucket_register()), so every parameter tensor keeps
its own 3LC scale, as it does without DDP's fusion.

Buckets on a CUDA device, and float16 or bfloat16 buckets from mixed
precision, go through reusable float32 host buffers (gradnet._staging):
copied in on the bucket's stream, allreduced, and copied back before the
Future completes, so a GPU or mixed-precision job registers the same hook.

Ranks find each other through torch.distributed's store: each publishes the
host:port its context binds. The job key comes from GN_KEY_FILE (or GN_KEY,
GN_KEY_FD) if set, else rank 0 draws one and shares it through the store;
it is never a command-line argument. GN_* variables override what init()
would choose.

A NaN or infinity in any rank's bucket fails the step on every rank with
-EDOM. By default the hook then fills the bucket with NaN on every rank, so
a GradScaler skips the optimizer step everywhere (and lowers its scale),
exactly as it would with Gloo's allreduce; with on_nonfinite="raise" the
Future carries gradnet.NonFiniteError instead.
"""
import os
import queue
import socket
import threading

import torch
import torch.distributed as dist

import gradnet
from gradnet._staging import BucketStaging

__all__ = ["GradnetState", "init", "allreduce_hook"]

_inits = 0


class GradnetState:
    """What the hook needs: the context, the registered buckets, the waiter.
    One state per DDP model: bucket indexes are its tensor ids."""

    def __init__(self, ctx, codec="3lc", s=0.0, on_nonfinite="nan",
                 member_scales=False, **params):
        if on_nonfinite not in ("nan", "raise"):
            raise ValueError("on_nonfinite is 'nan' or 'raise'")
        self.ctx = ctx
        self.codec = codec
        self.s = s
        self.params = params
        gradnet.codec_spec(codec, **params)     # a bad name fails here
        self.on_nonfinite = on_nonfinite
        self.member_scales = member_scales
        self.sizes = {}             # bucket index -> registered member sizes
        self.rebuilds = 0           # re-registrations after a size change
        self.nonfinite_steps = 0
        self.staging = BucketStaging()
        self._q = queue.Queue()
        self._thread = threading.Thread(target=self._waiter, daemon=True,
                                        name="gradnet-wait")
        self._thread.start()

    def _ensure(self, tid, n):
        """n: the bucket's member sizes (a tuple), or its size."""
        have = self.sizes.get(tid)
        if have == n:
            return
        if have is not None:
            # DDP rebuilt its buckets: the same on every rank, after the
            # same number of allreduces, as gn_tensor_unregister() needs.
            self.ctx.unregister(tid)
            self.rebuilds += 1
            del self.sizes[tid]
        if isinstance(n, tuple):
            self.ctx.register_bucket(tid, n, codec=self.codec, s=self.s,
                                     average=True, **self.params)
        else:
            self.ctx.register(tid, n, codec=self.codec, s=self.s,
                              average=True, **self.params)
        self.sizes[tid] = n

    def _waiter(self):
        while True:
            item = self._q.get()
            if item is None:
                return
            tid, flat, out, fut, stream = item
            # The copy back and the Future's completion run on the
            # bucket's stream, so DDP's use of the result waits for them.
            with self.staging.on_stream(stream):
                self._finish(tid, flat, out, fut)

    def _finish(self, tid, flat, out, fut):
        try:
            self.ctx.wait(tid)
            if out is not flat:
                self.staging.copy_out(tid, flat, out)
            fut.set_result(out)
        except gradnet.NonFiniteError as e:
            self.nonfinite_steps += 1
            if self.on_nonfinite == "raise":
                fut.set_exception(e)
            else:
                out.fill_(float("nan"))
                fut.set_result(out)
        except BaseException as e:  # noqa: B902 - the Future must end
            fut.set_exception(e)

    def stats(self):
        """The context's traffic counters, a dict (gn_stats_ctx())."""
        return self.ctx.stats()

    def close(self):
        if self._thread.is_alive():
            self._q.put(None)
            self._thread.join()
        self.ctx.close()


def _stage(state, tid, buf):
    """The float32 host buffer the bucket is reduced in (buf itself for a
    contiguous float32 CPU bucket), its stream, and the hook's Future: one
    that may carry tensors of the bucket's CUDA device."""
    if not state.staging.needed(buf):
        return buf, None, torch.futures.Future()
    stream = state.staging.stream(buf)
    devices = [buf.device] if stream is not None else None
    with state.staging.on_stream(stream):
        flat = state.staging.copy_in(tid, buf)
    return flat, stream, torch.futures.Future(devices=devices)


def allreduce_hook(state, bucket):
    """Average the bucket over all ranks with gradnet; returns a Future of
    the bucket's buffer holding the mean."""
    buf = bucket.buffer()
    tid = bucket.index()
    try:
        flat, stream, fut = _stage(state, tid, buf)
    except TypeError as e:
        fut = torch.futures.Future()
        fut.set_exception(e)
        return fut
    n = flat.numel()
    if state.member_scales:
        sizes = tuple(g.numel() for g in bucket.gradients())
        # The gradients lie back to back in the buffer; else one tensor.
        n = sizes if sizes and sum(sizes) == n else n
    state._ensure(tid, n)
    try:
        state.ctx.start(tid, flat)
    except gradnet.GradnetError as e:
        fut.set_exception(e)
        return fut
    state._q.put((tid, flat, buf, fut, stream))
    return fut


def _local_host():
    """The address peers reach this rank at: GN_HOST, else the interface
    that routes to MASTER_ADDR, else loopback."""
    host = os.environ.get("GN_HOST")
    if host:
        return host
    master = os.environ.get("MASTER_ADDR", "127.0.0.1")
    try:
        info = socket.getaddrinfo(master, 1, type=socket.SOCK_DGRAM)[0]
    except OSError:
        return "127.0.0.1"
    if info[4][0] in ("127.0.0.1", "::1") or master == "localhost":
        return info[4][0]
    with socket.socket(info[0], socket.SOCK_DGRAM) as s:
        s.connect(info[4])
        return s.getsockname()[0]


def _free_port(host):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(fam, socket.SOCK_DGRAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _fmt(host, port):
    return "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)


def init(process_group=None, store=None, codec="3lc", s=0.0,
         on_nonfinite="nan", timeout_ms=0, step_timeout_ms=0, mtu=0,
         chunk=0, insecure=False, transport=None, member_scales=False,
         **params):
    """Open this rank's gradnet context for the DDP job and return the
    hook's state. Call it on every rank, after init_process_group().
    codec: a name, number or spec string ("3lc", "3lc:s=1.5"), and any
    other keyword a parameter of it (codec="3lc", s=1.5);
    transport is "udp" or "dpdk" (None: GN_TRANSPORT, else udp);
    member_scales: each parameter keeps its own 3LC scale (GradnetState)."""
    gradnet.codec_spec(codec, **params)         # a bad name fails here
    global _inits
    pg = process_group if process_group is not None else dist.group.WORLD
    rank = dist.get_rank(pg)
    world = dist.get_world_size(pg)
    if store is None:
        store = dist.distributed_c10d._get_default_store()
    # Every rank calls init() the same number of times: a per-call prefix.
    prefix = "gradnet/%d/" % _inits
    _inits += 1
    env = os.environ

    peers = None
    if not env.get("GN_PEERS"):
        host = _local_host()
        store.set(prefix + "addr/%d" % rank, _fmt(host, _free_port(host)))
        peers = ",".join(store.get(prefix + "addr/%d" % r).decode()
                         for r in range(world))

    key = None
    have_key = any(env.get(v) for v in ("GN_KEY", "GN_KEY_FILE", "GN_KEY_FD"))
    secure = not (insecure or env.get("GN_INSECURE") == "1")
    if secure and not have_key:
        if rank == 0:
            store.set(prefix + "key", os.urandom(16))
        key = bytes(store.get(prefix + "key"))

    job = 0
    if not env.get("GN_JOB"):
        if rank == 0:
            store.set(prefix + "job", str(int.from_bytes(os.urandom(4), "little")))
        job = int(store.get(prefix + "job"))

    ctx = gradnet.Context(
        rank=None if env.get("GN_RANK") else rank,
        world_size=0 if env.get("GN_WORLD_SIZE") else world,
        peers=peers, key=key, job_id=job, timeout_ms=timeout_ms,
        step_timeout_ms=step_timeout_ms, mtu=mtu, chunk=chunk,
        insecure=not secure, transport=transport)
    # Nobody needs the key in the store once every context is open.
    dist.barrier(pg)
    if key is not None and rank == 0:
        try:
            store.delete_key(prefix + "key")
        except (RuntimeError, NotImplementedError):
            pass    # a store that cannot delete (FileStore); the job's own
    return GradnetState(ctx, codec=codec, s=s, on_nonfinite=on_nonfinite,
                        member_scales=member_scales, **params)
