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

Ranks find each other through torch.distributed's store: each binds its
context first (port 0) and publishes the address its socket holds, once:
a rank whose key in the store someone else wrote first refuses to start.
The ordered list is bound into gradnet's handshake, so ranks handed
different lists refuse each other.

The job key is the launcher's to provision: GN_KEY_FILE (a 0600 file on a
filesystem every rank reads) or GN_KEY_FD (a pipe the launcher opened).
The store is unauthenticated and clear text, so a key goes through it
only when the caller asks (key_via_store=True or GN_KEY_VIA_STORE=1), with
a warning saying what that exposes; without a key init() refuses, unless
insecure=True or GN_INSECURE=1 runs the job unauthenticated. GN_*
variables override what init() would choose.

A NaN or infinity in any rank's bucket fails the step on every rank with
-EDOM. By default the hook then fills the bucket with NaN on every rank, so
a GradScaler skips the optimizer step everywhere (and lowers its scale),
exactly as it would with Gloo's allreduce; with on_nonfinite="raise" the
Future carries gradnet.NonFiniteError instead.
"""
import ipaddress
import os
import queue
import socket
import threading
import warnings

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


KEY_VARS = ("GN_KEY_FILE", "GN_KEY_FD", "GN_KEY")

STORE_KEY_WARNING = (
    "gradnet: the job key goes through torch.distributed's store "
    "(key_via_store=True or GN_KEY_VIA_STORE=1). The store is "
    "unauthenticated and unencrypted: any process that can reach "
    "MASTER_ADDR:MASTER_PORT (a TCPStore listens on every interface) can "
    "read the key and then forge or read this job's gradients; a FileStore "
    "keeps it in its file. Give the ranks GN_KEY_FILE or GN_KEY_FD instead.")


def _one_host():
    """Does torchrun say every rank runs on this host?"""
    local, world = os.environ.get("LOCAL_WORLD_SIZE"), os.environ.get("WORLD_SIZE")
    return local is None or world is None or local == world


def _local_host():
    """Where this rank binds and what it publishes: GN_HOST, else the
    address of the interface that routes to MASTER_ADDR. In a job of
    several hosts a loopback address is never right (Debian names the host
    127.0.1.1 in /etc/hosts), so then None: the library binds the address
    this host routes other networks by."""
    host = os.environ.get("GN_HOST")
    if host:
        return host
    master = os.environ.get("MASTER_ADDR", "127.0.0.1")
    try:
        info = socket.getaddrinfo(master, 1, type=socket.SOCK_DGRAM)[0]
        with socket.socket(info[0], socket.SOCK_DGRAM) as s:
            s.connect(info[4])      # a route lookup: nothing is sent
            host = s.getsockname()[0]
    except OSError:
        host = "127.0.0.1"
    if ipaddress.ip_address(host.split("%")[0]).is_loopback and not _one_host():
        return None
    return host


def _publish(store, key, addr):
    """Set key to addr unless it is set: torch's compare_set() with an
    empty expected value stores the new one only where there is none, and
    returns what the store holds."""
    held = store.compare_set(key, "", addr)
    held = held.decode() if isinstance(held, bytes) else held
    if held != addr:
        raise RuntimeError(
            "gradnet: %s in torch.distributed's store is %r, not this rank's "
            "address %r: another client of the store wrote it first. Refusing "
            "to join a job whose peers someone else may have chosen." %
            (key, held, addr))
    # A TCPStore's compare_set() does not wake clients waiting in get()
    # (torch 1.13); writing the value it already holds does. A write by
    # someone else after this is caught at the handshake: the ranks' peer
    # lists differ.
    store.set(key, addr)


def _job_key(store, prefix, rank, key_via_store, secure):
    """The 16 bytes to pass as the key, or None: the library reads the key
    variables itself, or the job runs without a key."""
    if any(os.environ.get(v) for v in KEY_VARS) or not secure:
        return None
    if not (key_via_store or os.environ.get("GN_KEY_VIA_STORE") == "1"):
        raise RuntimeError(
            "gradnet: no job key. Give every rank the same key through "
            "GN_KEY_FILE (a mode 0600 file on a filesystem the ranks share) or "
            "GN_KEY_FD (a pipe the launcher opened); key_via_store=True (or "
            "GN_KEY_VIA_STORE=1) passes one through torch.distributed's store "
            "in clear text; insecure=True (or GN_INSECURE=1) runs without "
            "authentication.")
    warnings.warn(STORE_KEY_WARNING, RuntimeWarning, stacklevel=3)
    if rank == 0:
        store.set(prefix + "key", os.urandom(16))
    return bytes(store.get(prefix + "key"))


def init(process_group=None, store=None, codec="3lc", s=0.0,
         on_nonfinite="nan", timeout_ms=0, step_timeout_ms=0, mtu=0,
         chunk=0, insecure=False, transport=None, member_scales=False,
         key_via_store=False, **params):
    """Open this rank's gradnet context for the DDP job and return the
    hook's state. Call it on every rank, after init_process_group().
    codec: a name, number or spec string ("3lc", "3lc:s=1.5"), and any
    other keyword a parameter of it (codec="3lc", s=1.5);
    transport is "udp" or "dpdk" (None: GN_TRANSPORT, else udp);
    member_scales: each parameter keeps its own 3LC scale (GradnetState);
    key_via_store: without GN_KEY_FILE or GN_KEY_FD, rank 0 draws the key
    and passes it through the store, which anyone who reaches the store
    can read (a warning says so)."""
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

    secure = not (insecure or env.get("GN_INSECURE") == "1")
    key = _job_key(store, prefix, rank, key_via_store, secure)

    job = 0
    if not env.get("GN_JOB"):
        if rank == 0:
            store.set(prefix + "job", str(int.from_bytes(os.urandom(4), "little")))
        job = int(store.get(prefix + "job"))

    args = dict(rank=None if env.get("GN_RANK") else rank,
                world_size=0 if env.get("GN_WORLD_SIZE") else world,
                key=key, job_id=job, timeout_ms=timeout_ms,
                step_timeout_ms=step_timeout_ms, mtu=mtu, chunk=chunk,
                insecure=not secure, transport=transport)
    if env.get("GN_PEERS"):
        ctx = gradnet.Context(**args)
    else:
        # The address published is the one the socket holds from here on.
        ctx = gradnet.Context.bind(bind_addr=_local_host(), **args)
        try:
            _publish(store, prefix + "addr/%d" % rank, ctx.address)
            peers = [store.get(prefix + "addr/%d" % r).decode()
                     for r in range(world)]
            ctx.join(peers)
        except BaseException:
            ctx.close()
            raise
    # Nobody needs the key in the store once every context is open.
    dist.barrier(pg)
    if key is not None and rank == 0:
        try:
            store.delete_key(prefix + "key")
        except (RuntimeError, NotImplementedError):
            pass    # a store that cannot delete (FileStore); the job's own
    return GradnetState(ctx, codec=codec, s=s, on_nonfinite=on_nonfinite,
                        member_scales=member_scales, **params)
