"""One CPU body per optimizer: SGD, Momentum, Adam and AdamW update CPU parameters only through
the NumPy twins of the fused kernels (``_backend/fused.py``: ``_sgd_numpy``, ``_adam_numpy``).

- with the twin replaced by a recorder that computes nothing, a step changes no parameter and no
  state value: the optimizer modules hold no arithmetic body of their own;
- the optimizer's step equals the public ``fused.sgd_update``/``fused.adam_update`` bit for bit,
  for every parameter dtype (float16/bfloat16 with float32 state);
- both equal a scalar-by-scalar statement of the rounding order (state-dtype math, one rounding
  into a low-precision parameter) written here independently of the array code.
"""

import math
import re

import numpy as np
import pytest

import minigrad as mg
from minigrad._backend import fused
from minigrad._backend import multi_tensor as mt
from minigrad._backend.dtypes import bfloat16
from minigrad.optimizer import SGD, Adam, AdamW, Momentum

SGD_CASES = [dict(lr=0.1), dict(lr=0.1, momentum=0.9),
             dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01),
             dict(lr=0.1, momentum=0.8, nesterov=True, weight_decay=0.1),
             dict(lr=0.1, weight_decay=0.2)]
ADAM_CASES = [(Adam, dict(lr=1e-2)), (Adam, dict(lr=1e-2, weight_decay=0.1)),
              (Adam, dict(lr=1e-2, amsgrad=True, betas=(0.8, 0.9), eps=1e-6)),
              (Adam, dict(lr=1e-2, betas=(0.3, 0.5))),
              (AdamW, dict(lr=1e-2)), (AdamW, dict(lr=2e-2, weight_decay=0.3, amsgrad=True))]
DTYPES = [np.float16, bfloat16, np.float32, np.float64]
SHAPES = [(3, 4), (), (5,)]


def _stream(dtype, steps=4, seed=3):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[(rng.standard_normal(s) * 2).astype(dtype) for s in SHAPES] for _ in range(steps)]
    return init, grads


def _run(opt, params, grads):
    for step in grads:
        for p, g in zip(params, step):
            p.grad = mg.tensor(g.copy())
        opt.step()


class _Recorder:
    """Stands in for a NumPy twin: records each call, computes nothing."""

    def __init__(self):
        self.calls = []

    def __call__(self, *args):
        self.calls.append(args)


# ----------------------------------------------------------------------------- no body of its own
@pytest.mark.parametrize("make", [lambda ps: SGD(ps, **SGD_CASES[2]),
                                  lambda ps: SGD(ps, lr=0.1),
                                  lambda ps: Momentum(ps, 0.1, 0.9, weight_decay=0.1,
                                                      loss_scale=4.0, use_nesterov=True)],
                         ids=["sgd-momentum", "sgd-plain", "mindspore-momentum"])
def test_sgd_cpu_step_is_only_the_twin(monkeypatch, make):
    rec = _Recorder()
    monkeypatch.setattr(fused, "_sgd_numpy", rec)
    init, grads = _stream(np.float32, steps=2)
    params = [mg.Parameter(a.copy()) for a in init]
    opt = make(params)
    _run(opt, params, grads)
    for p, a in zip(params, init):
        np.testing.assert_array_equal(p.numpy(), a)  # the twin did nothing: nothing changed
        assert p._version == 2
    assert len(rec.calls) == 2 * len(params)
    mom = opt.param_groups[0]["momentum"]
    inv = 1.0 / getattr(opt, "loss_scale", 1.0)
    for i, call in enumerate(rec.calls):
        param, grad, buf, lr, momentum, damp, wd, nesterov, first = call
        p, (step, k) = params[i % len(params)], divmod(i, len(params))
        assert param is p._data
        np.testing.assert_array_equal(grad, grads[step][k] * np.float32(inv))
        assert (lr, momentum, damp, wd, nesterov) == tuple(
            opt.param_groups[0][key] for key in ("lr", "momentum", "dampening", "weight_decay",
                                                 "nesterov"))
        assert first == (mom != 0 and i < len(params))
        if mom:
            assert buf is opt.state[p]["momentum_buffer"]
            np.testing.assert_array_equal(buf, 0)  # allocated by sgd_update, never written
        else:
            assert buf is None and p not in opt.state


@pytest.mark.parametrize("cls,kw", ADAM_CASES[1:3] + ADAM_CASES[5:])
def test_adam_cpu_step_is_only_the_twin(monkeypatch, cls, kw):
    rec = _Recorder()
    monkeypatch.setattr(fused, "_adam_numpy", rec)
    init, grads = _stream(np.float32, steps=3)
    params = [mg.Parameter(a.copy()) for a in init]
    opt = cls(params, **kw)
    _run(opt, params, grads)
    beta1, beta2 = opt.param_groups[0]["betas"]
    for p, a in zip(params, init):
        np.testing.assert_array_equal(p.numpy(), a)
        st = opt.state[p]
        assert st["step"] == 3 and p._version == 3
        for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
            if key in st:
                np.testing.assert_array_equal(st[key], 0)
    assert ("max_exp_avg_sq" in opt.state[params[0]]) == bool(kw.get("amsgrad"))
    assert len(rec.calls) == 3 * len(params)
    for i, (param, _g, m, v, vmax, s, decoupled, amsgrad) in enumerate(rec.calls):
        p, t = params[i % len(params)], i // len(params) + 1
        st = opt.state[p]
        assert param is p._data and m is st["exp_avg"] and v is st["exp_avg_sq"]
        assert vmax is st.get("max_exp_avg_sq") and amsgrad == bool(kw.get("amsgrad"))
        assert decoupled == (cls is AdamW)
        assert s["step_size"] == kw["lr"] / (1.0 - beta1 ** t)
        assert s["bc2"] == math.sqrt(1.0 - beta2 ** t)


def test_skipped_cpu_step_never_reaches_the_twin(monkeypatch):
    rec = _Recorder()
    monkeypatch.setattr(fused, "_sgd_numpy", rec)
    monkeypatch.setattr(fused, "_adam_numpy", rec)
    init, grads = _stream(np.float32, steps=1)
    for opt_cls, kw in ((SGD, dict(lr=0.1, momentum=0.9)), (AdamW, dict(lr=0.1))):
        params = [mg.Parameter(a.copy()) for a in init]
        opt = opt_cls(params, **kw)
        for p, g in zip(params, grads[0]):
            p.grad = mg.tensor(g)
        opt.step(found_inf=np.ones(1, np.int32))
        assert opt.state == {} and all(p._version == 0 for p in params)
    assert rec.calls == []


# ----------------------------------------------------------------------------- the same values
def _sgd_by_hand(init, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False):
    ws, bufs = [a.copy() for a in init], [None] * len(init)
    for step in grads:
        for i, g in enumerate(step):
            bufs[i] = fused.sgd_update(ws[i], g, bufs[i], lr, momentum, dampening, weight_decay,
                                       nesterov)
    return ws, [{"momentum_buffer": b} if b is not None else None for b in bufs]


def _adam_by_hand(init, grads, decoupled, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=None,
                  amsgrad=False):
    wd = (1e-2 if decoupled else 0.0) if weight_decay is None else weight_decay
    ws = [a.copy() for a in init]
    sd = [np.float64 if a.dtype == np.float64 else np.float32 for a in init]
    st = [{"exp_avg": np.zeros(a.shape, d), "exp_avg_sq": np.zeros(a.shape, d)}
          for a, d in zip(init, sd)]
    for t, step in enumerate(grads, 1):
        for w, g, s in zip(ws, step, st):
            vmax = fused.adam_update(w, g, s["exp_avg"], s["exp_avg_sq"],
                                     s.get("max_exp_avg_sq"), t, lr, *betas, eps, wd, decoupled,
                                     amsgrad)
            if amsgrad:
                s["max_exp_avg_sq"] = vmax
    return ws, st


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kw", SGD_CASES)
def test_sgd_optimizer_equals_the_fused_function_bit_for_bit(kw, dtype):
    init, grads = _stream(dtype)
    params = [mg.Parameter(a.copy()) for a in init]
    opt = SGD(params, **kw)
    _run(opt, params, grads)
    ws, states = _sgd_by_hand(init, grads, **kw)
    for p, w, st in zip(params, ws, states):
        assert p.numpy().dtype == np.dtype(dtype)
        np.testing.assert_array_equal(p.numpy(), w)
        if st is None:
            assert p not in opt.state
        else:
            buf = opt.state[p]["momentum_buffer"]
            assert buf.dtype == (np.float64 if dtype == np.float64 else np.float32)
            np.testing.assert_array_equal(buf, st["momentum_buffer"])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("cls,kw", ADAM_CASES)
def test_adam_optimizer_equals_the_fused_function_bit_for_bit(cls, kw, dtype):
    init, grads = _stream(dtype)
    params = [mg.Parameter(a.copy()) for a in init]
    opt = cls(params, **kw)
    _run(opt, params, grads)
    ws, states = _adam_by_hand(init, grads, cls is AdamW, **kw)
    for p, w, st in zip(params, ws, states):
        np.testing.assert_array_equal(p.numpy(), w)
        assert opt.state[p]["step"] == len(grads)
        assert set(opt.state[p]) == {"step"} | set(st)
        for key, value in st.items():
            assert opt.state[p][key].dtype == value.dtype
            np.testing.assert_array_equal(opt.state[p][key], value)


# ----------------------------------------------------------------------------- the rounding order
def _c(dtype):
    return np.float64 if dtype == np.float64 else np.float32


def _sgd_scalar(p, g, buf, first, lr, momentum, dampening, weight_decay, nesterov):
    """One element of one SGD step, one rounding per operation, in the state dtype."""
    c = _c(type(p))
    w, d = c(p), c(g)
    if weight_decay != 0:
        d = d + c(weight_decay) * w
    if momentum != 0:
        buf = d if first else c(momentum) * buf + c(1.0 - dampening) * d
        d = d + c(momentum) * buf if nesterov else buf
    return type(p)(w - c(lr) * d), buf


def _adam_scalar(p, g, m, v, vmax, t, decoupled, lr, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.0, amsgrad=False):
    """One element of one Adam/AdamW step, in the order of PyTorch's single-tensor Adam."""
    c = _c(type(p))
    beta1, beta2 = betas
    w, d = c(p), c(g)
    if weight_decay != 0:
        if decoupled:
            w = w * c(1.0 - lr * weight_decay)
        else:
            d = d + c(weight_decay) * w
    m = m + c(1.0 - beta1) * (d - m)
    v = v * c(beta2) + c(1.0 - beta2) * (d * d)
    vmax = max(vmax, v)
    denom = np.sqrt(vmax if amsgrad else v) / c(math.sqrt(1.0 - beta2 ** t)) + c(eps)
    w = w - (m / denom) * c(lr / (1.0 - beta1 ** t))
    return type(p)(w), m, v, vmax


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kw", SGD_CASES)
def test_sgd_cpu_step_follows_the_stated_rounding_order(kw, dtype):
    init, grads = _stream(dtype, steps=3)
    a0 = init[2]
    p = mg.Parameter(a0.copy())
    opt = SGD([p], **kw)
    hp = dict(dict(momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False), **kw)
    ref = [(x, None) for x in a0]
    for t, step in enumerate(grads):
        p.grad = mg.tensor(step[2].copy())
        opt.step()
        ref = [_sgd_scalar(x, g, b, t == 0, **hp) for (x, b), g in zip(ref, step[2])]
    np.testing.assert_array_equal(p.numpy(), np.array([x for x, _ in ref], dtype))
    if hp["momentum"]:
        np.testing.assert_array_equal(opt.state[p]["momentum_buffer"],
                                      np.array([b for _, b in ref], _c(dtype)))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("cls,kw", ADAM_CASES)
def test_adam_cpu_step_follows_the_stated_rounding_order(cls, kw, dtype):
    init, grads = _stream(dtype, steps=3)
    a0 = init[2]
    p = mg.Parameter(a0.copy())
    opt = cls([p], **kw)
    hp = dict(kw, weight_decay=opt.param_groups[0]["weight_decay"])
    zero = _c(dtype)(0)
    ref = [(x, zero, zero, zero) for x in a0]
    for t, step in enumerate(grads, 1):
        p.grad = mg.tensor(step[2].copy())
        opt.step()
        ref = [_adam_scalar(x, g, m, v, vm, t, cls is AdamW, **hp)
               for (x, m, v, vm), g in zip(ref, step[2])]
    np.testing.assert_array_equal(p.numpy(), np.array([r[0] for r in ref], dtype))
    st = opt.state[p]
    for key, k in (("exp_avg", 1), ("exp_avg_sq", 2), ("max_exp_avg_sq", 3)):
        if key in st:
            np.testing.assert_array_equal(st[key], np.array([r[k] for r in ref], _c(dtype)))


def test_hand_values_float16_weights_float32_buffer():
    """float16 weights, float32 state: ``w - lr*d`` is computed in float32 and rounded once, so a
    step below the weight's spacing is lost in the weight but kept by the buffer."""
    p = mg.Parameter(np.array([1.0, 2048.0], np.float16))  # spacing: 1 below 2048, 2 above
    opt = SGD([p], lr=0.5, momentum=0.5)
    for buf, w in (([0.5, 0.5], [0.75, 2048.0]),      # buf = g; 2047.75 rounds back to 2048
                   ([0.75, 0.75], [0.375, 2048.0])):  # buf = 0.5*buf + g; 2047.625 -> 2048
        p.grad = mg.tensor(np.array([0.5, 0.5], np.float16))
        opt.step()
        np.testing.assert_array_equal(opt.state[p]["momentum_buffer"], np.float32(buf))
        np.testing.assert_array_equal(p.numpy(), np.array(w, np.float16))


# ----------------------------------------------------------------------------- the kernels' text
# The CUDA kernels are the GPU's compiled form of the same body. Their loop bodies use a small C
# subset (declarations, compound assignments, if/else, ?:, static_cast, sqrt/pow/max) that the
# helpers below run on the CPU, one rounding per operation (C without FMA contraction), so a
# CPU-only run checks that the NumPy twin and the kernels' text compute the same bits.
_CTYPE = {"float": np.float32, "double": np.float64}


def _c_expr(expr: str) -> str:
    """A C expression of that subset as Python (``c ? a : b`` -> ``(a if c else b)``)."""
    depth, q = 0, None
    for i, ch in enumerate(expr):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and ch == "?" and q is None:
            q = i
        elif depth == 0 and ch == ":" and q is not None:
            return (f"(({_c_expr(expr[q + 1:i])}) if ({_c_expr(expr[:q])}) "
                    f"else ({_c_expr(expr[i + 1:])}))")
    return expr.strip()


class _CBody:
    """One C statement (a ``{...}`` block) as Python source lines in ``out``. Assignments
    convert to the target's type as C does: ``types`` maps each variable to "float", "double"
    or a kernel type letter (P/G/B); declarations add to it."""

    def __init__(self, src: str, types: dict):
        src = re.sub(r"static_cast<\s*(\w+)\s*>", r"_T_\1", src.replace("const ", ""))
        src = re.sub(r"\((double|float)\)([\w\[\]]+)", r"_T_\1(\2)", src)
        self.s = re.sub(r"(?<![\w.])(\d+\.\d*)", r"_T_double(\1)", src)  # C literals: double
        self.i, self.types, self.out = 0, dict(types), []
        self._stmt(0)

    def _at(self, pattern: str):
        while self.s[self.i].isspace():
            self.i += 1
        return re.match(pattern, self.s[self.i:])

    def _paren(self) -> str:
        start, depth = self.s.index("(", self.i), 0
        for k in range(start, len(self.s)):
            depth += (self.s[k] == "(") - (self.s[k] == ")")
            if depth == 0:
                self.i = k + 1
                return self.s[start + 1:k]
        raise ValueError("unbalanced parentheses")

    def _stmt(self, ind: int) -> None:
        pad = " " * ind
        if self._at(r"\{"):
            self.i += 1
            self.out.append(pad + "pass")
            while not self._at(r"\}"):
                self._stmt(ind)
            self.i += 1
        elif self._at(r"if\s*\("):
            self.out.append(f"{pad}if {_c_expr(self._paren())}:")
            self._stmt(ind + 4)
            if self._at(r"else\b"):
                self.i += 4
                self.out.append(pad + "else:")
                self._stmt(ind + 4)
        else:
            end = self.s.index(";", self.i)
            self.out.append(pad + self._simple(self.s[self.i:end].strip()))
            self.i = end + 1

    def _simple(self, text: str) -> str:
        m = re.fullmatch(r"(\w+)\s+(\w+)\s*=(.+)", text, re.S)
        if m:  # a declaration
            self.types[m.group(2)] = m.group(1)
            return f"{m.group(2)} = _T_{m.group(1)}({_c_expr(m.group(3))})"
        name, op, rhs = re.fullmatch(r"(\w+)\s*([-+*/]?)=(.+)", text, re.S).groups()
        rhs = f"{name} {op} ({_c_expr(rhs)})" if op else _c_expr(rhs)
        return f"{name} = _T_{self.types[name]}({rhs})"


def _run_c(body: str, ctype: str, scalars: dict, arrays: dict) -> None:
    """Run the C loop body ``body`` once per element: ``arrays`` maps each per-element operand
    name to ``(array, type letter)`` and is written back in place; ``scalars`` are the launch
    arguments, already in their kernel types (raw ones as arrays)."""
    types = {n: ctype for n in scalars} | {n: t for n, (_, t) in arrays.items()}
    code = compile("\n".join(_CBody("{" + body + "}", types).out), "<kernel>", "exec")
    ns0 = {"sqrt": np.sqrt, "pow": lambda a, b: np.float64(a) ** np.float64(b), "max": max,
           "_T_float": np.float32, "_T_double": np.float64,
           **{f"_T_{t}": a.dtype.type for a, t in arrays.values()}}
    shape = arrays["p"][0].shape
    for idx in np.ndindex(shape):
        ns = dict(ns0, **scalars, **{n: a[idx] for n, (a, _) in arrays.items()})
        exec(code, ns)  # noqa: S102 - the kernels' own source, translated above
        for n, (a, _) in arrays.items():
            a[idx] = ns[n]


def _ctype(param):
    return "double" if param.dtype == np.float64 else "float"


def _sgd_kernels_on_cpu(w, g, buf, first, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
                        nesterov=False, multi_tensor=False):
    """``fused._sgd_cupy`` (or, past the first step, ``multi_tensor.sgd``) run on the CPU with
    the launch arguments those functions pass, converted to the kernels' parameter types."""
    ct = _ctype(w)
    c = _CTYPE[ct]
    scalars = dict(lr=c(lr), wd=c(weight_decay), found=np.zeros(1, np.int32))
    arrays = dict(p=(w, "P"), g=(np.ascontiguousarray(g), "G"))
    if multi_tensor:
        head, loop = mt._SGD.split("FOR_EACH_ELEMENT(total) {", 1)
        assert "if (found[0] != 0) return;" in head
        lines = [ln for ln in loop.splitlines()
                 if not re.search(r"long long j;|tensor_of|reinterpret_cast", ln)]
        body = "if (found[0] == 0) {" + "\n".join(lines).replace("[j]", "")
        for slot in "CPGB":
            body = body.replace("{" + slot + "}", ct if slot == "C" else slot)
        scalars.update(mom=c(momentum), damp=c(1.0 - dampening), nesterov=np.int32(nesterov))
        arrays["buf"] = (buf if momentum != 0 else w.copy(), "B")
    elif momentum != 0:
        body = fused._SGD_OP.format(C=ct)
        scalars.update(mom=c(momentum), damp=c(1.0 - dampening), nesterov=np.int32(nesterov),
                       first=np.int32(first))
        arrays["buf"] = (buf, "B")
    else:
        body = fused._SGD_PLAIN_OP.format(C=ct)
    _run_c(body, ct, scalars, arrays)


def _adam_kernel_on_cpu(w, g, m, v, vmax, t, lr, beta1, beta2, eps, wd, decoupled, amsgrad,
                        device_step=False):
    """``fused._adam_cupy`` run on the CPU: its kernel body (with the AMSGrad line, and with
    the in-kernel bias corrections for a device step counter) and its launch arguments."""
    ct = _ctype(w)
    c = _CTYPE[ct]
    op = fused._ADAM_OP.replace("{AMS}", fused._AMS if amsgrad else "")
    scalars = dict(omb1=c(1.0 - beta1), beta2=c(beta2), omb2=c(1.0 - beta2), eps=c(eps),
                   wd=c(wd), decay=c(1.0 - lr * wd), decoupled=np.int32(decoupled),
                   found=np.zeros(1, np.int32))
    if device_step:
        op = fused._SC + op
        scalars.update(lr=np.float64(lr), beta1=np.float64(beta1), beta2d=np.float64(beta2),
                       step=np.full(1, t, np.int64))
    else:
        scalars.update(step_size=c(lr / (1.0 - beta1 ** t)), bc2=c(math.sqrt(1.0 - beta2 ** t)))
    arrays = dict(p=(w, "P"), g=(g, "G"), m=(m, "B"), v=(v, "B"))
    if amsgrad:
        arrays["vmax"] = (vmax, "B")
    _run_c(op.format(C=ct), ct, scalars, arrays)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("kw", SGD_CASES)
def test_sgd_kernel_text_computes_the_twins_bits(kw, dtype):
    init, grads = _stream(dtype, steps=3)
    hp = dict(dict(momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False), **kw)
    sd = _c(dtype)
    twin, kern, multi = (init[0].copy() for _ in range(3))
    bt = bk = bm = None
    for t, step in enumerate(grads):
        g = step[0]
        bt = fused.sgd_update(twin, g, bt, **hp)
        if hp["momentum"] != 0 and bk is None:
            bk = np.zeros(twin.shape, sd)
        _sgd_kernels_on_cpu(kern, g, bk, t == 0, **hp)
        if t == 0:  # the multi-tensor kernel takes over once the buffers exist
            multi, bm = kern.copy(), None if bk is None else bk.copy()
        else:
            _sgd_kernels_on_cpu(multi, g, bm, False, multi_tensor=True, **hp)
        np.testing.assert_array_equal(kern, twin)
        np.testing.assert_array_equal(multi, twin)
        if hp["momentum"]:
            np.testing.assert_array_equal(bk, bt)
            np.testing.assert_array_equal(bm, bt)


@pytest.mark.parametrize("device_step", [False, True], ids=["host-step", "device-step"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("cls,kw", ADAM_CASES)
def test_adam_kernel_text_computes_the_twins_bits(cls, kw, dtype, device_step):
    init, grads = _stream(dtype, steps=3)
    hp = dict(dict(betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2 if cls is AdamW else 0.0,
                   amsgrad=False), **kw)
    sd = _c(dtype)
    w_t, w_k = init[0].copy(), init[0].copy()
    st_t, st_k = ([np.zeros(w_t.shape, sd) for _ in range(3)] for _ in range(2))
    for t, step in enumerate(grads, 1):
        g = step[0]
        fused.adam_update(w_t, g, *st_t, t, hp["lr"], *hp["betas"], hp["eps"],
                          hp["weight_decay"], cls is AdamW, hp["amsgrad"])
        _adam_kernel_on_cpu(w_k, g, *st_k, t, hp["lr"], *hp["betas"], hp["eps"],
                            hp["weight_decay"], cls is AdamW, hp["amsgrad"], device_step)
        np.testing.assert_array_equal(w_k, w_t)
        for a, b in zip(st_k, st_t):
            np.testing.assert_array_equal(a, b)
