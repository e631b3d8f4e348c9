# SPDX-License-Identifier: MIT
"""gradnet - allreduce compressed gradients over UDP, from Python.

A thin binding over the public C API (include/gradnet/gradnet.h):

    import gradnet
    with gradnet.Context() as ctx:            # the job from GN_* variables
        ctx.register(1, grad.numel(), average=True)
        # or another codec, by name, with its parameters as keywords:
        # ctx.register(2, n, codec="3lc", s=1.5, average=True)
        try:
            ctx.allreduce(1, grad)            # in place, the mean of all ranks
        except gradnet.NonFiniteError:
            pass                              # a NaN on some rank: skip the step

Failures raise GradnetError carrying gradnet's own message; -EDOM (a NaN or
infinity on some rank, reported on every rank) raises NonFiniteError so a
trainer can skip the step. gradnet.torch holds the DDP communication hook.
"""
import ctypes
import errno as _errno

from . import _lib
from ._lib import GN_CODEC_3LC, GN_CODEC_NONE, GN_CODEC_DEFAULT  # noqa: F401

__all__ = ["Context", "GradnetError", "NonFiniteError", "version",
           "CODECS", "codec_spec"]


def _registered():
    """Every codec the library has, by name (its registry, not a copy)."""
    names = {}
    for i in range(1, 256):
        n = _lib.lib.gn_codec_name(i)
        if n:
            names[n.decode()] = i
    return names


CODECS = dict(_registered(), default=GN_CODEC_DEFAULT, dense=GN_CODEC_NONE)


class GradnetError(OSError):
    """A gradnet call failed: errno is positive, strerror gradnet's message."""

    def __init__(self, err, message, call=""):
        super().__init__(err, message)
        self.call = call

    def __str__(self):
        name = _errno.errorcode.get(self.errno, str(self.errno))
        return "%s: %s (%s)" % (self.call or "gradnet", self.strerror, name)


class NonFiniteError(GradnetError):
    """-EDOM: some rank's gradient held a NaN or infinity; every rank gets
    this for the step, and the error feedback is as before it."""


def _raise(r, msg, call):
    err = -r
    if not msg:
        msg = _lib.lib.gn_strerror(r).decode(errors="replace")
    cls = NonFiniteError if err == _errno.EDOM else GradnetError
    raise cls(err, msg, call)


def version():
    return _lib.lib.gn_version().decode()


def _param_text(v):
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, float):
        return repr(v)
    return str(v)


def codec_spec(codec, **params):
    """(codec number, "key=value,..." or None) from a codec given as a
    number, a name ("topk") or a spec string ("topk:density=0.01,bits=4"),
    plus parameters as keywords. The library checks names and ranges and
    says what is wrong; a name it does not know is a ValueError here."""
    text = None
    if isinstance(codec, str):
        name, _, text = codec.partition(":")
        name = name.strip().lower()
        if name not in CODECS:
            raise ValueError("gradnet: codec %r is unknown; known: %s" %
                             (name, ", ".join(sorted(CODECS))))
        codec = CODECS[name]
    elif not isinstance(codec, int):
        raise TypeError("gradnet: codec is a name or a number")
    items = [text] if text else []
    items += ["%s=%s" % (k, _param_text(v)) for k, v in params.items()
              if v is not None]
    return codec, ",".join(items) or None


def _codec(c):
    return codec_spec(c)[0]


def _address(buf, elems=None):
    """(address, float32 count) of a contiguous float32 buffer: a torch
    tensor, a numpy array, or anything with the buffer protocol."""
    if hasattr(buf, "data_ptr") and hasattr(buf, "element_size"):
        import torch
        if buf.dtype != torch.float32 or not buf.is_contiguous() or \
           buf.device.type != "cpu":
            raise TypeError("gradnet: a contiguous float32 CPU tensor is needed")
        return buf.data_ptr(), buf.numel()
    ai = getattr(buf, "__array_interface__", None)
    if ai is not None:
        if ai["typestr"] != "<f4" or (ai.get("strides") is not None):
            raise TypeError("gradnet: a contiguous float32 array is needed")
        if ai["data"][1]:
            raise TypeError("gradnet: the array is read-only")
        n = 1
        for d in ai["shape"]:
            n *= d
        return ai["data"][0], n
    mv = memoryview(buf)
    if mv.format != "f" or not mv.c_contiguous or mv.readonly:
        raise TypeError("gradnet: a writable contiguous float32 buffer is needed")
    c = (ctypes.c_char * mv.nbytes).from_buffer(mv)
    return ctypes.addressof(c), mv.nbytes // 4


class Context:
    """One rank's membership in a gradnet job (gn_ctx_open()).

    Arguments left None or 0 come from the GN_* environment variables, as
    with a zeroed gn_ctx_opts (transport: "udp" or "dpdk", else
    GN_TRANSPORT, else udp). key is 16 bytes; never put it on a command
    line: GN_KEY_FILE or GN_KEY_FD are the ways to pass it.
    codec is the job's default codec (name, number or spec string), and
    any other keyword is a parameter of it (density=0.01).

    Context.bind() is the first half of opening, for launchers whose ranks
    exchange addresses: the context's socket is bound (bind_addr, else
    GN_HOST; port 0 for any free one), ctx.address says where, and
    ctx.join(peers) takes every rank's address and runs the handshake.
    """

    @classmethod
    def bind(cls, **kwargs):
        """A context whose socket is bound but that has not joined its job
        (gn_ctx_bind()); publish ctx.address, then call ctx.join()."""
        return cls(_bind_only=True, **kwargs)

    def __init__(self, rank=None, world_size=0, peers=None, key=None,
                 job_id=0, mtu=0, timeout_ms=0, codec=None, s=0.0, chunk=0,
                 step_timeout_ms=0, insecure=False, transport=None,
                 bind_addr=None, _bind_only=False, **codec_params):
        o = _lib.CtxOpts()
        o.sz = ctypes.sizeof(o)
        if rank is not None:
            o.rank = rank
            o.flags |= _lib.GN_CTX_RANK
        o.world_size = world_size
        self._peers = peers.encode() if peers else None
        o.peers = self._peers
        if key is not None:
            if len(key) != 16:
                raise ValueError("gradnet: the key is 16 bytes")
            self._key = (ctypes.c_uint8 * 16)(*key)
            o.key = ctypes.cast(self._key, ctypes.POINTER(ctypes.c_uint8))
            o.key_len = 16
        o.job_id = job_id
        o.mtu = mtu
        o.timeout_ms = timeout_ms
        if insecure:
            o.flags |= _lib.GN_CTX_INSECURE
        if codec is not None or codec_params:
            o.codec, params = codec_spec(codec if codec is not None else 0,
                                         **codec_params)
            self._codec_params = params.encode() if params else None
            o.codec_params = self._codec_params
        o.s = s
        o.chunk = chunk
        o.step_timeout_ms = step_timeout_ms
        self._transport = transport.encode() if transport else None
        o.transport = self._transport
        self._bind_addr = bind_addr.encode() if bind_addr else None
        o.bind_addr = self._bind_addr
        h = ctypes.c_void_p()
        call = "gn_ctx_bind" if _bind_only else "gn_ctx_open"
        r = getattr(_lib.lib, call)(ctypes.byref(o), ctypes.byref(h))
        if key is not None:
            ctypes.memset(self._key, 0, 16)
            del self._key
        if r:
            _raise(r, _lib.lib.gn_last_errmsg().decode(errors="replace"),
                   call)
        self._h = h.value
        self.rank = _lib.lib.gn_ctx_rank(self._h)
        self.world_size = _lib.lib.gn_ctx_world_size(self._h)

    @property
    def address(self):
        """Where the context's socket is bound, "host:port" (udp only)."""
        buf = ctypes.create_string_buffer(64)
        self._check(_lib.lib.gn_ctx_local_addr(self._handle(), buf, 64),
                    "gn_ctx_local_addr")
        return buf.value.decode()

    def join(self, peers):
        """Every rank's address, "host:port,..." in rank order (a list is
        joined with commas), then the handshake (gn_ctx_join())."""
        if not isinstance(peers, str):
            peers = ",".join(peers)
        self._check(_lib.lib.gn_ctx_join(self._handle(), peers.encode()),
                    "gn_ctx_join")

    def _check(self, r, call):
        if r < 0:
            if not self._h:
                raise GradnetError(_errno.EBADF, "context is closed", call)
            msg = _lib.lib.gn_ctx_errmsg(self._h)
            _raise(r, msg.decode(errors="replace") if msg else "", call)
        return r

    def _handle(self):
        if not self._h:
            raise GradnetError(_errno.EBADF, "context is closed", "gradnet")
        return self._h

    def register(self, tensor_id, elems, codec="default", s=0.0,
                 average=False, **params):
        """Declare tensor tensor_id of elems float32 values; codec by name,
        number or spec string, its parameters as keywords."""
        cid, text = codec_spec(codec, **params)
        text = text.encode() if text else None
        o = _lib.TensorOpts(ctypes.sizeof(_lib.TensorOpts), tensor_id, elems,
                            cid, s,
                            _lib.GN_TENSOR_AVERAGE if average else 0, text)
        self._check(_lib.lib.gn_tensor_register(self._handle(),
                                                ctypes.byref(o)),
                    "gn_tensor_register")

    def register_bucket(self, bucket_id, sizes, codec="default", s=0.0,
                        average=False, shared_scale=False, **params):
        """Declare a bucket: tensors of the given sizes back to back in one
        float32 buffer of their total size, allreduced as one under
        bucket_id (gn_bucket_register()). Each member keeps its own 3LC
        scale unless shared_scale."""
        sizes = [int(n) for n in sizes]
        elems = (ctypes.c_size_t * max(len(sizes), 1))(*sizes)
        flags = ((_lib.GN_TENSOR_AVERAGE if average else 0) |
                 (_lib.GN_BUCKET_SHARED_SCALE if shared_scale else 0))
        cid, text = codec_spec(codec, **params)
        text = text.encode() if text else None
        o = _lib.BucketOpts(ctypes.sizeof(_lib.BucketOpts), bucket_id,
                            len(sizes), elems, cid, s, flags, text)
        self._check(_lib.lib.gn_bucket_register(self._handle(),
                                                ctypes.byref(o)),
                    "gn_bucket_register")

    def unregister(self, tensor_id):
        """Forget tensor_id (every rank alike) so it can be registered again."""
        self._check(_lib.lib.gn_tensor_unregister(self._handle(), tensor_id),
                    "gn_tensor_unregister")

    def start(self, tensor_id, buf):
        """Compress buf and start its allreduce; buf must stay alive and
        untouched until wait()."""
        addr, _ = _address(buf)
        self._check(_lib.lib.gn_allreduce_start(self._handle(), tensor_id,
                                                addr),
                    "gn_allreduce_start")

    def wait(self, tensor_id):
        """Finish the allreduce of tensor_id; releases the GIL meanwhile."""
        self._check(_lib.lib.gn_allreduce_wait(self._handle(), tensor_id),
                    "gn_allreduce_wait")

    def allreduce(self, tensor_id, buf):
        """Sum (or mean) buf over every rank, in place."""
        addr, _ = _address(buf)
        self._check(_lib.lib.gn_allreduce(self._handle(), tensor_id, addr),
                    "gn_allreduce")

    @staticmethod
    def _dict(st):
        d = {f: getattr(st, f) for f in _lib.STAT_FIELDS}
        drops = {}
        for i in range(_lib.GN_DROP_MAX):
            name = _lib.lib.gn_drop_name(i)
            if name is None or name == b"?":
                break
            drops[name.decode()] = st.drops[i]
        d["drops"] = drops
        return d

    def stats(self, tensor_id=None, peer=None):
        """Traffic counters of the context, one tensor or one peer, as a dict."""
        st = _lib.Stats()
        st.sz = ctypes.sizeof(st)
        h = self._handle()
        if tensor_id is not None:
            r = _lib.lib.gn_stats_tensor(h, tensor_id, ctypes.byref(st))
        elif peer is not None:
            r = _lib.lib.gn_stats_peer(h, peer, ctypes.byref(st))
        else:
            r = _lib.lib.gn_stats_ctx(h, ctypes.byref(st))
        self._check(r, "gn_stats")
        return self._dict(st)

    def close(self):
        if self._h:
            _lib.lib.gn_ctx_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_h", None):
            self.close()
