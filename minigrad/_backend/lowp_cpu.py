"""The low-precision CPU kernel policy: float16/bfloat16 ops compute in float32 and round once.

NumPy's float16 ufunc loops convert element by element in scalar code (an add is ~60x slower
than in float32), and so are its float16 <-> float32 casts on builds whose baseline lacks F16C
(the PyPI wheels: numpy 2.4, x86-64-v2 baseline). ml_dtypes' bfloat16 loops are generic too,
though its casts are vectorised. So on the CPU every low-precision elementwise op goes through
this module: its operands are widened to float32, the op runs in float32, and the result is
rounded once to the dtype NumPy would have given (``compute``). The result dtype is unchanged.

Bits: NumPy's float16 loops and ml_dtypes' bfloat16 loops themselves compute each op in float
and round the result, so ``+ - * /`` and ``sqrt`` give the same bits (a float32 result rounded
once to float16 is the correctly rounded float16 result: 24 >= 2*11+2). Transcendental
functions may differ from NumPy's own float16 loops by the float32 implementation's error,
at most one float16/bfloat16 ulp. Selections (relu, clamp, maximum) follow float32's rule for
the sign of a zero tie (``maximum(-0., 0.)`` is ``-0.``, the first operand, as PyTorch's).
``tests/test_lowp_cpu.py`` checks all of this over random and special values.

The casts are this module's own for float16 (``widen``/``narrow``, bit-identical to ``astype``,
including NaN, infinities, signed zeros, subnormals and overflow) and ml_dtypes' for bfloat16.
Both take the optional C extension ``_f16c`` where it was built (``setup.py``) and the CPU has
F16C: 0.07-0.16 ns per element instead of astype's 1.7-2.5 (float16) and 0.1-0.4 (bfloat16);
else float16 takes integer and float32 arithmetic over 64K-element blocks in NumPy (3.5x and
1.9x faster than ``astype``).
CuPy arrays never come here: CUDA computes low precision natively.
"""

from __future__ import annotations

import numpy as np

from .dtypes import bfloat16, float16, float32

__all__ = ["is_low", "widen", "narrow", "narrow_float64", "compute", "with_number", "selection",
           "keep", "relu", "relu_grad"]

try:  # the optional C extension (setup.py), used where the CPU has F16C
    from . import _f16c
except ImportError:  # built without a C compiler: the NumPy kernels below
    _f16c = None
F16C = _f16c is not None and _f16c.available()  # tests switch it off to check the NumPy twin
C_RELU = _f16c is not None  # its ReLU kernels are portable C (tests switch it off too)

_nd = np.ndarray
_PY_SCALARS = (int, float, bool)
_BLOCK = 1 << 16       # elements per block: a block's temporaries (< 1 MiB) stay in L2
_MIN_FAST = 8192       # below this NumPy's scalar cast is as fast as the block loop's calls
_MIN_F16C = 512        # ... and as the C extension's call (about 1 us)
_F16_MAX = 65504.0
_MIN_C_RELU = 256      # below this NumPy's passes cost no more than the call
_TWO_P112 = np.float32(2.0 ** 112)
_TWO_M112 = np.float32(2.0 ** -112)
# float16's smallest normal exponent, as float32 exponent bits: an array operand, because NumPy's
# maximum loop does not vectorise a scalar one (3x slower)
_MIN_EXP = np.full(_BLOCK, 113 << 23, np.uint32)
_MIN_EXP.flags.writeable = False


def is_low(a) -> bool:
    """True for a NumPy (CPU) array of float16 or bfloat16."""
    return type(a) is _nd and a.itemsize == 2 and (a.dtype == float16 or a.dtype == bfloat16)


# --------------------------------------------------------------------------------------- casts
def widen(a):
    """A float32 copy of the float16/bfloat16 CPU array ``a``, bit-identical to
    ``a.astype(float32)``; any other array is returned as it is."""
    d = a.dtype
    if d == float16 or d == bfloat16:
        if F16C and a.size >= _MIN_F16C:
            return _native_cast(a, float32)
        if d == bfloat16:
            return a.astype(float32)  # ml_dtypes' cast is a vectorised shift
        return _widen_f16(a) if a.size >= _MIN_FAST else a.astype(float32)
    return a


def narrow(a, dtype):
    """The float32 CPU array ``a`` rounded to ``dtype`` (float16 or bfloat16), bit-identical to
    ``a.astype(dtype)``: round to nearest even, overflow to inf (with NumPy's overflow
    warning), NaN stays NaN. Other dtypes are left to ``astype``."""
    if a.dtype == float32 and (dtype == float16 or dtype == bfloat16):
        if F16C and a.size >= _MIN_F16C:
            out = _native_cast(a, dtype)
            if out is not None:
                return out
        if dtype == float16 and a.size >= _MIN_FAST:
            return _narrow_f16(a)
    return a.astype(dtype, copy=False)


def narrow_float64(a):
    """The float64 CPU array ``a`` rounded to float16, bit-identical to ``a.astype(float16)``,
    or None where NumPy must convert it (a NaN, an infinity or an overflow: NumPy's rules).

    Rounding to float32 and then to float16 could round twice (a float64 just above a float16
    midpoint can land on it); rounding to odd first cannot (float32 carries 13 more bits than
    float16's 11): the float32 is truncated toward zero and its last bit set where the rounding
    was inexact, so it stays on the side of the midpoint ``a`` is on. NumPy's cast converts one
    element at a time (slowest on float16 subnormals: small gradients)."""
    lo, hi = a.min(), a.max()
    if not (lo >= -_F16_MAX and hi <= _F16_MAX):
        return None
    f = a.astype(float32)                  # to nearest
    d = f - a                              # (float64) 0 where that was exact
    inexact = d != 0
    d *= a                                 # > 0 where |f| > |a|
    bits = f.view(np.uint32)
    bits -= d > 0                          # truncated toward zero ...
    bits |= inexact                        # ... with the sticky bit: rounded to odd
    return narrow(f, float16)


def _layout(a):
    """``(flat C-ordered array, unflatten)``: F-ordered arrays are read as their transpose, so
    the result keeps the input's memory order as ``astype`` does; other strided arrays are
    copied (a fast 2- or 4-byte copy)."""
    if a.flags.c_contiguous:
        return a.reshape(-1), a.shape, False
    if a.flags.f_contiguous:
        return a.T.reshape(-1), a.T.shape, True
    a = np.ascontiguousarray(a)
    return a.reshape(-1), a.shape, False


def _native_cast(a, dtype):
    """``a`` converted by the C extension (float16/bfloat16 <-> float32), or None where NumPy or
    ml_dtypes must narrow it (float16: an infinity, a NaN or an overflow, for NumPy's NaN bits
    and overflow warning; bfloat16: a NaN, for ml_dtypes' NaN)."""
    if dtype == float32:
        convert = _f16c.widen if a.dtype == float16 else _f16c.widen_bf16
    else:
        convert = _f16c.narrow if dtype == float16 else _f16c.narrow_bf16
    if a.flags.c_contiguous:  # the common case, kept short: ~1 us a call
        out = np.empty(a.shape, dtype)
        return out if convert(a, out) else None
    flat, shape, transposed = _layout(a)
    out = np.empty(flat.shape, dtype)
    if not convert(flat, out):
        return None
    out = out.reshape(shape)
    return out.T if transposed else out


def _widen_f16(a):
    # A float16 h = s eeeee mmmmmmmmmm becomes the float32 bits s 000 eeeee mmmmmmmmmm 0{13}
    # (sign-extend, shift, mask), a float32 2**-112 times the value: multiplying by 2**112 is
    # exact and also turns float16 subnormals into the right normal float32s. Blocks holding
    # an infinity or NaN (exponent 31) take astype.
    flat, shape, transposed = _layout(a)
    h = flat.view(np.int16)
    out = np.empty(flat.shape, float32)
    o = out.view(np.int32)
    ou = out.view(np.uint32)
    check = np.empty(min(_BLOCK, h.size), np.int16)
    for i in range(0, h.size, _BLOCK):
        hb = h[i:i + _BLOCK]
        m = check[:hb.size]
        np.bitwise_and(hb, 0x7C00, out=m)
        if m.max() == 0x7C00:
            out[i:i + _BLOCK] = flat[i:i + _BLOCK].astype(float32)
            continue
        np.copyto(o[i:i + _BLOCK], hb)  # int16 -> int32 sign-extends
        ub = ou[i:i + _BLOCK]
        ub <<= 13
        ub &= 0x8FFFE000
        fb = out[i:i + _BLOCK]
        fb *= _TWO_P112
    out = out.reshape(shape)
    return out.T if transposed else out


def _narrow_f16(a):
    # Round |x| to float16's precision in float32: adding C = 1.5 * 2**(e+13) (e: x's exponent,
    # at least -14, float16's subnormal step) leaves a sum whose float32 ulp is float16's ulp at
    # x, so the FPU rounds to nearest even exactly where float16 would; subtracting C gives the
    # rounded value back exactly. Times 2**-112, its float32 bits are the float16 bits shifted
    # left by 13 (subnormals land on float32 subnormals, exactly). Blocks that overflow, or hold
    # an infinity or NaN, take astype (NumPy's rules and warnings).
    flat, shape, transposed = _layout(a)
    u = flat.view(np.uint32)
    out = np.empty(flat.shape, float16)
    o = out.view(np.int16)
    n = min(_BLOCK, u.size)
    ta, tc = np.empty(n, np.uint32), np.empty(n, np.uint32)
    for i in range(0, u.size, _BLOCK):
        ub = u[i:i + _BLOCK]
        k = ub.size
        t, c = ta[:k], tc[:k]
        np.bitwise_and(ub, 0x7FFFFFFF, out=t)
        np.bitwise_and(t, 0x7F800000, out=c)
        np.maximum(c, _MIN_EXP[:k], out=c)  # exponent at least -14
        # (an exponent above 115 wraps C's bits; such a block has |x| >= 2**16 and is flagged
        # below whatever C is)
        c += (13 << 23) | 0x400000
        tf, cf = t.view(float32), c.view(float32)
        tf += cf
        tf -= cf
        tf *= _TWO_M112
        if t.max() >= 0x0F800000:  # >= 65536 after rounding, inf or NaN
            o[i:i + _BLOCK] = flat[i:i + _BLOCK].astype(float16).view(np.int16)
            continue
        t >>= 13
        np.right_shift(ub, 16, out=c)
        c &= 0x8000
        np.bitwise_or(t, c, out=o[i:i + _BLOCK], casting="unsafe")
    out = out.reshape(shape)
    return out.T if transposed else out


# ------------------------------------------------------------------------------------ compute
def _low_dtype(args):
    """The float16/bfloat16 dtype of the CPU arrays among ``args`` (None if there is none)."""
    for a in args:
        if type(a) is _nd or isinstance(a, np.generic):
            d = a.dtype
            if d == float16 or d == bfloat16:
                return d
    return None


def _widened(args, low, lowp_result):
    out = []
    for a in args:
        if type(a) is _nd:
            out.append(widen(a) if a.dtype == low else a)
        elif isinstance(a, np.generic) and a.dtype == low:
            out.append(np.float32(a))
        elif lowp_result and type(a) in _PY_SCALARS and not isinstance(a, bool):
            # NumPy rounds a Python number to the array's dtype first (NEP 50; bfloat16's
            # are lifted by the caller): 0.1 meets a float16 array as float16(0.1).
            out.append(np.float32(low.type(a)))
        else:
            out.append(a)
    return out


def compute(f, *args):
    """``f(*args)`` for an elementwise ``f`` (a NumPy ufunc or an operator) with at least one
    float16/bfloat16 CPU operand: computed in float32 on widened operands and rounded once to
    the dtype NumPy gives ``f(*args)``; results that are not floats (comparisons) come back as
    they are. Mixed operands (float16 with float32 or an integer array) widen the
    low-precision side exactly and compute as NumPy would."""
    low = _low_dtype(args)
    if low is None:
        return f(*args)
    # Python numbers never widen a float array (NumPy's rule for float16, minigrad's for
    # bfloat16, which NumPy would widen to float64)
    res = np.result_type(*[a for a in args if type(a) not in _PY_SCALARS])
    lowp_result = res == low
    out = f(*_widened(args, low, lowp_result))
    if lowp_result and getattr(out, "dtype", None) == float32:
        if isinstance(out, np.generic):
            out = np.asarray(out)
        return narrow(out, low)
    return out


def with_number(f, x, number, number_first=False):
    """``f(x, number)`` (``f(number, x)`` with ``number_first``) for a float16/bfloat16 CPU
    array and a Python number kept in float32, not rounded to x's dtype first: PyTorch's
    opmath for a product or quotient with a number (``x * 0.1``, ``x / 70000.0``, where
    float16(70000.0) is inf). Rounded once to x's dtype."""
    with np.errstate(over="ignore"):
        k = np.float32(number)
    xw = widen(x)
    return narrow(f(k, xw) if number_first else f(xw, k), x.dtype)


# --------------------------------------------------------------------------------- selections
# float16 and bfloat16 are sign-magnitude: read as int16, non-negative numbers (and NaNs with
# the sign bit clear) are >= 0 and negative ones are below -NEG, where NEG is the bit pattern of
# inf without its sign; what lies in (-NEG, 0) are NaNs with the sign bit set. Selections on
# these integers never convert.
_INF_BITS = {float16: 0x7C00, bfloat16: 0x7F80}
_INT_OF_SIZE = {2: np.int16, 4: np.int32, 8: np.int64}


def keep(a, mask):
    """``a`` where the bool array ``mask`` (of ``a``'s shape) holds, else +0, bit for bit (NaN
    and inf included) for a CPU array of any numeric dtype.

    ``np.where(mask, a, 0)`` branches per element and runs 20-30x slower on a random mask than
    this multiplication of ``a``'s bits, read as integers of its size, by the mask's 0 and 1.
    """
    it = _INT_OF_SIZE.get(a.dtype.itemsize)
    if it is None or a.ndim == 0 or a.shape != mask.shape or a.dtype.kind == "c":
        return np.where(mask, a, a.dtype.type(0))
    return np.multiply(a.view(it), mask, dtype=it).view(a.dtype)


def selection(f, x):
    """``f(x)`` for an ``f`` that only compares, takes maxima/minima of and copies the elements
    of the float16/bfloat16 CPU array ``x`` (max pooling): ``f`` runs on int16 keys that order
    like the numbers (zeros of both signs equal), and its array result is mapped back. No
    conversion, and half the bytes of float32. With a NaN in ``x``, and wherever the C
    extension converts (its two casts are cheaper than the keys), it runs in float32
    (``compute``), where NaN propagates as NumPy's float loops propagate it."""
    if F16C and x.size >= _MIN_F16C:
        return compute(f, x)  # the C casts cost less than making the keys (max pooling: 15%)
    b = x.view(np.int16)
    sign = b >> 15                        # 0 or -1
    key = b & 0x7FFF                      # the magnitude
    if key.max(initial=0) > _INF_BITS[x.dtype]:  # a NaN
        return compute(f, x)
    key ^= sign
    key -= sign                           # -magnitude for negative numbers (and -0 -> 0)
    k = f(key)
    sign = k >> 15
    k ^= sign
    k -= sign                             # |key|
    k |= sign & -0x8000                   # the sign bit back
    return k.view(x.dtype)


def relu(x):
    """``max(x, 0)`` of a float16/bfloat16 CPU array, as PyTorch's clamp computes it:
    negative numbers give +0, both zeros and NaN stay. One pass in the C extension where it was
    built (``C_RELU``), else three comparisons and a multiplication in NumPy."""
    if C_RELU and x.size >= _MIN_C_RELU:
        out = np.empty(x.shape, dtype=x.dtype)
        _f16c.relu(np.ascontiguousarray(x), out, _INF_BITS[x.dtype])
        return out
    i = x.view(np.int16)
    # positive, +0, a NaN of either sign, or -0 (0x8000) itself
    return keep(x, (i > -(0x8000 - _INF_BITS[x.dtype])) | (i == -0x8000))


def relu_grad(gy, y):
    """``0 where y <= 0 else gy`` for a float16/bfloat16 activation ``y`` on the CPU (gy of
    y's shape; the C extension as in ``relu``)."""
    if C_RELU and y.size >= _MIN_C_RELU and gy.shape == y.shape and gy.itemsize == 2:
        out = np.empty(y.shape, dtype=gy.dtype)
        _f16c.relu_grad(np.ascontiguousarray(gy), np.ascontiguousarray(y), out,
                        _INF_BITS[y.dtype])
        return out
    i = y.view(np.int16)
    # y <= 0: +0 (i == 0) or a negative non-NaN (i <= -NEG, -0 included).
    passes = i > -(0x8000 - _INF_BITS[y.dtype])
    passes &= i != 0
    return keep(gy, passes)
