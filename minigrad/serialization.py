"""Checkpoints: ``mg.save(obj, path)`` / ``mg.load(path, device="cpu")`` -- safetensors, no pickle.

File layout (a valid safetensors file that any safetensors reader can open):

* every array in ``obj`` (Tensors, Parameters, NumPy/CuPy arrays, NumPy scalars) is one safetensors
  tensor named by its path in the structure (``"model/conv1.weight"``, ``"optimizer/state/0/..."``);
  bfloat16 is stored as safetensors ``BF16``, so it round-trips bit for bit;
* the structure itself (dicts with any hashable keys, lists, tuples, None, bools, ints of any size,
  floats including inf/NaN, strings) is one JSON document in the ``__metadata__`` entry
  ``minigrad.structure``; arrays appear there as references to their tensor names;
* ``minigrad.crc32`` is a CRC-32 of the whole file -- length field, every header field (tensor
  names, dtype codes, shapes, offsets, metadata) and the tensor bytes -- computed with its own eight
  hex digits read as ``00000000``; any flipped byte is rejected, not just those in JSON strings.
* nesting is bounded (:data:`MAX_DEPTH` levels), so a crafted file cannot exhaust the stack.

Loading only parses JSON and copies bytes: it never executes code. Saving is atomic: the bytes go
to a temporary file in the target directory, are flushed and fsynced, the file is renamed over the
target with ``os.replace`` and the directory is fsynced, so a crash leaves either the old or the
new checkpoint, never half of one. Temporary files carry the writer's process id, so the next
save to the same path removes those left behind by a killed writer.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import zlib

import numpy as np
import safetensors

from . import _backend as B
from ._backend.sync_debug import host_read
from .core.tensor import Parameter, Tensor

__all__ = ["save", "load", "MAX_DEPTH"]

_FORMAT = "minigrad"
_VERSION = "2"  # "1": the checksum covered the structure and the tensor bytes only
_CRC_KEY = "minigrad.crc32"
# The checksum's own digits inside the header; JSON escapes the quotes of any other occurrence
# of this text (a user's dict key in the structure), so a valid file holds it exactly once.
_CRC_NEEDLE = b'"' + _CRC_KEY.encode() + b'":"'
_CRC_HOLE = b"00000000"

MAX_DEPTH = 200
"""Deepest nesting of dicts/lists/tuples a checkpoint may hold (saving refuses deeper ones)."""

# numpy dtype -> (name safetensors' serializer accepts, code the file header uses)
_DTYPES = {
    np.dtype(np.float64): "F64", np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
    B.bfloat16: "BF16", np.dtype(np.int64): "I64", np.dtype(np.int32): "I32",
    np.dtype(np.int16): "I16", np.dtype(np.int8): "I8", np.dtype(np.uint64): "U64",
    np.dtype(np.uint32): "U32", np.dtype(np.uint16): "U16", np.dtype(np.uint8): "U8",
    np.dtype(np.bool_): "BOOL",
}
_FROM_CODE = {code: dtype for dtype, code in _DTYPES.items()}


# ---------------------------------------------------------------------------------- encoding
def _host_array(arr, where: str) -> np.ndarray:
    """A C-contiguous little-endian NumPy copy-or-view of a NumPy/CuPy array."""
    if type(arr) is not np.ndarray:
        arr = host_read(arr, "save")  # CuPy -> host
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    if arr.dtype not in _DTYPES:
        raise TypeError(f"mg.save: cannot store the {arr.dtype} array at '{where}'; supported "
                        f"dtypes: {sorted(str(d) for d in _DTYPES)}")
    # not np.ascontiguousarray: it turns 0-d arrays into 1-d ones
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


class _Encoder:
    def __init__(self):
        self.tensors: dict[str, np.ndarray] = {}

    def _add(self, arr, where: str) -> str:
        name = where or "value"
        if name in self.tensors:  # e.g. int key 0 and str key "0" under the same dict
            i = 1
            while f"{name}#{i}" in self.tensors:
                i += 1
            name = f"{name}#{i}"
        self.tensors[name] = _host_array(arr, where)
        return name

    def encode(self, obj, where: str, depth: int = 0):
        if isinstance(obj, np.generic):  # before float: np.float64 subclasses Python float
            return {"$scalar": self._add(np.asarray(obj), where)}
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)  # JSON ints have arbitrary precision: RNG states survive exactly
        if isinstance(obj, float):
            if math.isfinite(obj):
                return float(obj)
            return {"$float": "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")}
        if isinstance(obj, Tensor):
            return {"$tensor": self._add(obj._data, where), "requires_grad": obj.requires_grad,
                    "parameter": isinstance(obj, Parameter)}
        if isinstance(obj, np.ndarray) or (B.cupy is not None and isinstance(obj, B.cupy.ndarray)):
            return {"$array": self._add(obj, where)}
        sep = "/" if where else ""
        if isinstance(obj, (dict, list, tuple)):
            if depth >= MAX_DEPTH:
                raise ValueError(f"mg.save: the container at '{where[:60]}...' is nested more than "
                                 f"{MAX_DEPTH} levels deep; flatten the structure")
            depth += 1
        if isinstance(obj, dict):
            return {"$dict": [[self._key(k, where, depth),
                               self.encode(v, f"{where}{sep}{k}", depth)]
                              for k, v in obj.items()]}
        if isinstance(obj, list):
            return [self.encode(v, f"{where}{sep}{i}", depth) for i, v in enumerate(obj)]
        if isinstance(obj, tuple):
            return {"$tuple": [self.encode(v, f"{where}{sep}{i}", depth)
                               for i, v in enumerate(obj)]}
        if callable(getattr(obj, "state_dict", None)):  # a Module, an optimizer, a scheduler
            raise TypeError(
                f"mg.save: cannot store the {type(obj).__name__} object itself at "
                f"'{where or '<root>'}': checkpoints hold data, never objects (loading them would "
                f"mean running code); save its state instead, mg.save(obj.state_dict(), f), and "
                "restore it into a new object with obj.load_state_dict(mg.load(f))")
        raise TypeError(
            f"mg.save: cannot store a {type(obj).__name__} at '{where or '<root>'}'; checkpoints "
            "hold dicts, lists, tuples, Tensors, NumPy/CuPy arrays, numbers, strings, bools and "
            "None (call .state_dict() on modules, optimizers and schedulers)")

    def _key(self, key, where, depth):
        if isinstance(key, (Tensor, np.ndarray)) or not _hashable_plain(key):
            raise TypeError(f"mg.save: dict key {key!r} at '{where or '<root>'}' is not a "
                            "str/int/float/bool/None/tuple")
        return self.encode(key, where, depth)


def _hashable_plain(key) -> bool:
    if key is None or isinstance(key, (str, int, float, bool)):
        return True
    return isinstance(key, tuple) and all(_hashable_plain(k) for k in key)


def _crc32_v1(tensors: dict, structure: str) -> str:
    """Version-1 checksum: the structure JSON and the tensor bytes (not dtypes/shapes/offsets)."""
    crc = zlib.crc32(structure.encode())
    for name in sorted(tensors):
        crc = zlib.crc32(tensors[name].reshape(-1).view(np.uint8), crc)
    return f"{crc:08x}"


def _file_crc(data, hole: int) -> bytes:
    """CRC-32 of all of ``data`` with the 8 bytes at ``hole`` read as ``00000000``."""
    view = memoryview(data)
    crc = zlib.crc32(view[:hole])
    crc = zlib.crc32(_CRC_HOLE, crc)
    return b"%08x" % zlib.crc32(view[hole + 8:], crc)


def _crc_hole(data, header_end: int) -> int:
    """Offset of the checksum digits in the header; -1 unless the key occurs exactly once."""
    pos = data.find(_CRC_NEEDLE, 8, header_end)
    if pos < 0 or data.find(_CRC_NEEDLE, pos + 1, header_end) >= 0:
        return -1
    return pos + len(_CRC_NEEDLE)


def _serialize(tensors: dict, metadata: dict) -> bytes:
    if hasattr(safetensors, "TensorSpec"):  # safetensors >= 0.8: raw pointers
        specs = {k: safetensors.TensorSpec(dtype=a.dtype.name, shape=list(a.shape),
                                           data_ptr=a.ctypes.data, data_len=a.nbytes)
                 for k, a in tensors.items()}
    else:  # older releases take the bytes themselves
        specs = {k: {"dtype": a.dtype.name, "shape": list(a.shape), "data": a.tobytes()}
                 for k, a in tensors.items()}
    # ``tensors`` keeps every array alive while the serializer reads through the pointers.
    return bytes(safetensors.serialize(specs, metadata=metadata))


def _remove_stale_temps(directory: str, base: str) -> None:
    """Delete temp files of ``base`` whose writer process no longer exists (killed mid-save)."""
    prefix = f".{base}."
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        pid = name[len(prefix):-4].split(".", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:  # the writer is gone: its temp file is an orphan
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass
        except OSError:  # alive but someone else's (EPERM): leave it
            pass


def _atomic_write(path: str, chunks) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    _remove_stale_temps(directory, base)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{base}.{os.getpid()}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if hasattr(os, "O_DIRECTORY"):  # make the rename itself durable (POSIX)
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def save(obj, path) -> None:
    """Write ``obj`` to ``path`` (or a binary file object) as a safetensors checkpoint,
    atomically.

    Args:
        obj: nested dicts/lists/tuples of Tensors, NumPy/CuPy arrays, numbers (ints of any
            size, floats incl. inf/NaN), strings, bools and None -- e.g. ``{"model":
            model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3, "rng":
            mg._backend.random.get_state()}``. GPU arrays are copied to the host.
        path: the file to write (its directory must exist); replaced atomically. A file object
            opened for binary writing (``io.BytesIO``, ``open(p, "wb")``) gets the bytes written
            at its position instead (atomicity is then the caller's).

    Raises:
        TypeError: an object of another type (the message names where it is; a whole Module
            or optimizer: save its ``state_dict()``), or an array dtype safetensors cannot
            store.
        ValueError: the object nests deeper than :data:`MAX_DEPTH` levels.

    Example:
        >>> import os, tempfile, minigrad as mg
        >>> path = os.path.join(tempfile.mkdtemp(), "ckpt.safetensors")
        >>> mg.save({"w": mg.ones(2, dtype=mg.bfloat16), "step": 2 ** 70}, path)
        >>> state = mg.load(path)
        >>> state["w"].dtype == mg.bfloat16, state["step"] == 2 ** 70
        (True, True)
    """
    enc = _Encoder()
    structure = enc.encode(obj, "")
    structure_json = json.dumps(structure, allow_nan=False, separators=(",", ":"))
    metadata = {
        "format": _FORMAT,
        "minigrad.version": _VERSION,
        "minigrad.structure": structure_json,
        _CRC_KEY: _CRC_HOLE.decode(),
    }
    data = _serialize(enc.tensors, metadata)
    hole = _crc_hole(data, 8 + int.from_bytes(data[:8], "little"))
    view = memoryview(data)  # written in three pieces: no copy of a large checkpoint
    chunks = (view[:hole], _file_crc(data, hole), view[hole + 8:])
    if hasattr(path, "write"):  # a file object (io.BytesIO, an open file)
        for chunk in chunks:
            path.write(chunk)
        return
    _atomic_write(os.fspath(path), chunks)


# ---------------------------------------------------------------------------------- decoding
def _load_device(device, map_location):
    if map_location is None:
        return device
    if device is not None:
        raise TypeError("mg.load: got both device= and map_location=; they are one argument "
                        "(map_location is PyTorch's spelling): pass one of them")
    if callable(map_location):
        probe = object()
        if map_location(probe, "cpu") is probe:  # ``lambda storage, loc: storage``: stay put
            return "cpu"
        raise TypeError("mg.load: map_location functions other than `lambda storage, loc: "
                        "storage` are not supported; pass the device, e.g. map_location='cuda'")
    if isinstance(map_location, dict):
        raise TypeError("mg.load: a map_location dict is not supported; pass the device, e.g. "
                        "map_location='cpu'")
    return map_location


class _Decoder:
    def __init__(self, arrays: dict, device: str, path: str):
        self.arrays = arrays
        self.device = device
        self.path = path

    def _array(self, name):
        try:
            return self.arrays[name]
        except (KeyError, TypeError):
            raise ValueError(f"mg.load: corrupt checkpoint {self.path!r}: the structure refers "
                             f"to tensor {name!r}, which the file does not contain") from None

    def decode(self, node, depth: int = 0):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list) or isinstance(node, dict) and (
                "$dict" in node or "$tuple" in node):
            if depth >= MAX_DEPTH:
                raise ValueError(f"mg.load: corrupt checkpoint {self.path!r}: the structure "
                                 f"nests deeper than {MAX_DEPTH} levels, which mg.save never "
                                 "writes")
            depth += 1
        if isinstance(node, list):
            return [self.decode(v, depth) for v in node]
        if isinstance(node, dict) and len(node) >= 1:
            if "$dict" in node:
                return {self._hashable(self.decode(k, depth)): self.decode(v, depth)
                        for k, v in node["$dict"]}
            if "$tuple" in node:
                return tuple([self.decode(v, depth) for v in node["$tuple"]])
            if "$tensor" in node:
                arr = B.asarray(self._array(node["$tensor"]), device=self.device)
                cls = Parameter if node.get("parameter") else Tensor
                if cls is Tensor and not node.get("requires_grad"):
                    return Tensor._make(arr, False, None, 0)
                return cls(arr, requires_grad=bool(node.get("requires_grad")))
            if "$array" in node:
                return B.asarray(self._array(node["$array"]), device=self.device)
            if "$scalar" in node:
                return self._array(node["$scalar"])[()]
            if "$float" in node:
                return float(node["$float"])
        raise ValueError(f"mg.load: corrupt checkpoint {self.path!r}: unexpected structure node "
                         f"{str(node)[:80]!r}")

    def _hashable(self, key):
        try:
            hash(key)
        except TypeError:  # only a corrupt file puts a list or dict where a key belongs
            raise ValueError(f"mg.load: corrupt checkpoint {self.path!r}: a dict key is a "
                             f"{type(key).__name__}") from None
        return key


def _read_header(data: bytes, path: str) -> dict:
    if len(data) < 8:
        raise ValueError(f"mg.load: {path!r} is not a checkpoint: it has {len(data)} bytes, too "
                         "few for a safetensors header (truncated or empty file?)")
    n = int.from_bytes(data[:8], "little")
    if 8 + n > len(data):
        raise ValueError(f"mg.load: {path!r} is truncated or corrupt: the header claims {n} "
                         f"bytes but the file has only {len(data) - 8} after the length field")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ValueError(f"mg.load: {path!r} has a corrupt safetensors header (not valid JSON: "
                         f"{e})") from None
    if not isinstance(header, dict):
        raise ValueError(f"mg.load: {path!r} has a corrupt safetensors header (not an object)")
    meta = header.get("__metadata__")
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        raise ValueError(
            f"mg.load: {path!r} is a safetensors file but not a minigrad checkpoint (no "
            "'format: minigrad' metadata); read plain safetensors files with "
            "safetensors.numpy.load_file")
    if meta.get("minigrad.version") != "1":  # version 2 and later: one checksum of every byte
        hole = _crc_hole(data, 8 + n)
        if hole < 0 or data[hole:hole + 8] != _file_crc(data, hole):
            raise ValueError(f"mg.load: {path!r} is corrupt: its bytes do not match the checksum "
                             "(the file was modified or damaged after it was written)")
        if meta.get("minigrad.version") != _VERSION:
            raise ValueError(f"mg.load: {path!r} is checkpoint format version "
                             f"{meta.get('minigrad.version')!r}, newer than this minigrad "
                             f"reads ({_VERSION}); upgrade minigrad")
    return meta


def load(path, device=None, *, map_location=None, weights_only=None, mmap=None):
    """Read a checkpoint written by :func:`save`; never executes code.

    Args:
        path: the checkpoint file, or a binary file object (``io.BytesIO``) read from its
            position.
        device: where Tensors and arrays are placed (``"cpu"``, the default, gives NumPy arrays,
            ``"cuda"`` CuPy arrays); NumPy scalars stay on the host.
        map_location: PyTorch's spelling of ``device`` (a device string or ``mg.device``; the
            idiom ``lambda storage, loc: storage`` means the CPU).
        weights_only, mmap: PyTorch's switches, accepted and ignored: a minigrad checkpoint
            holds data only (no pickle), so every load is what ``weights_only=True`` asks for,
            and ``weights_only=False`` enables nothing more.

    Returns:
        The saved object: dicts, lists, tuples, Tensors (Parameters stay Parameters), arrays,
        Python numbers, strings, bools and None, exactly as saved.

    Raises:
        ValueError: the file is truncated, corrupt (bad header, checksum mismatch) or not a
            minigrad checkpoint; the message names the path and the problem.
    """
    device = B.normalize_device(_load_device(device, map_location) or "cpu")
    if hasattr(path, "read"):  # a file object
        data = path.read()
        path = str(getattr(path, "name", f"<{type(path).__name__}>"))
    else:
        path = os.fspath(path)
        with open(path, "rb") as f:
            data = f.read()
    meta = _read_header(data, path)
    try:
        flat = safetensors.deserialize(data)
    except Exception as e:  # SafetensorError: offsets, sizes, dtypes inconsistent
        raise ValueError(f"mg.load: {path!r} is corrupt or truncated: {e}") from None
    arrays = {}
    for name, info in flat:
        dtype = _FROM_CODE.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"mg.load: {path!r}: tensor {name!r} has dtype {info['dtype']}, "
                             "which minigrad checkpoints do not use")
        buf = info["data"]
        expected = int(np.prod(info["shape"], dtype=np.int64)) * dtype.itemsize
        if len(buf) != expected:
            raise ValueError(f"mg.load: {path!r} is corrupt: tensor {name!r} has {len(buf)} "
                             f"bytes for shape {info['shape']} {dtype}")
        arrays[name] = np.frombuffer(bytearray(buf) if isinstance(buf, bytes) else buf,
                                     dtype=dtype).reshape(info["shape"])
    if meta.get("minigrad.version") == "1" and meta.get(_CRC_KEY) != _crc32_v1(
            arrays, meta.get("minigrad.structure", "")):
        raise ValueError(f"mg.load: {path!r} is corrupt: the tensor data or structure does "
                         "not match its checksum (the file was modified or damaged after it "
                         "was written)")
    try:
        structure = json.loads(meta["minigrad.structure"])
    except (KeyError, ValueError, RecursionError) as e:
        raise ValueError(f"mg.load: {path!r} is corrupt: bad structure metadata ({e})") from None
    return _Decoder(arrays, device, path).decode(structure)
