/* float16/bfloat16 <-> float32 conversion with x86 vector instructions, for lowp_cpu.py.
 *
 * NumPy's float16 casts convert one element at a time (numpy 2.4's wheels: about 2.5 ns per
 * element float32 -> float16 on the development machine) and ml_dtypes' bfloat16 cast takes
 * 0.4 ns; F16C's VCVTPS2PH/VCVTPH2PS convert eight float16s per instruction and a bfloat16 is
 * float32's top half, rounded on the integer bits. All round to nearest even as NumPy and
 * ml_dtypes do, so the results are the same bits. Where they would differ, the caller is told
 * and converts with NumPy/ml_dtypes instead:
 *   float32 -> float16:  an infinity, a NaN, or a value that overflows to infinity (NumPy warns,
 *                        and keeps NaN payloads its own way);
 *   float32 -> bfloat16: a NaN (ml_dtypes makes every NaN its quiet NaN);
 *   float16 -> float32:  NaNs are converted here the way NumPy does (payload shifted, not
 *                        quieted as the instruction does); bfloat16 -> float32 is a shift.
 * Beside the casts, ReLU and its gradient on float16/bfloat16 bits (portable C, any CPU): one
 * pass where NumPy takes three comparisons and a multiplication (lowp_cpu.relu).
 * Optional: setup.py builds this module when a C compiler is there; without it (or without
 * F16C in the CPU, or off x86-64, for the casts) minigrad uses its NumPy kernels. The GIL is released while
 * converting. Arrays come in through the buffer protocol, C-contiguous, of the element sizes
 * the names say.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef int (*convert_fn)(const void *src, void *dst, Py_ssize_t n);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MINIGRAD_X86 1
#include <cpuid.h>
#include <immintrin.h>

static int has_f16c, has_avx2;

static void detect_cpu(void) {
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return;
    const unsigned int osxsave = 1u << 27, avx = 1u << 28, f16c = 1u << 29;
    if ((c & (osxsave | avx | f16c)) != (osxsave | avx | f16c))
        return;
    unsigned int lo, hi;  /* the OS must save the YMM registers (XCR0 bits 1 and 2) */
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6u) != 6u)
        return;
    has_f16c = 1;
    has_avx2 = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 5));
}

/* ------------------------------------------------------------------------------- float16 */
/* Nonzero when some |x| >= 65520 (rounds to infinity) or is NaN. */
__attribute__((target("avx,f16c")))
static int narrow_f16(const void *src_, void *dst_, Py_ssize_t n) {
    const float *src = src_;
    uint16_t *dst = dst_;
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256 limit = _mm256_set1_ps(65520.0f);
    __m256 bad = _mm256_setzero_ps();
    float tail[8] = {0};
    uint16_t out[8];
    for (Py_ssize_t i = 0; i < n; i += 8) {
        const float *s = src + i;
        if (i + 8 > n) {  /* the ragged end, through a zero-padded copy */
            memcpy(tail, s, (size_t)(n - i) * sizeof(float));
            s = tail;
        }
        __m256 v = _mm256_loadu_ps(s);
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(_mm256_and_ps(v, absmask), limit, _CMP_NLT_UQ));
        __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
        if (i + 8 > n) {
            _mm_storeu_si128((__m128i *)out, h);
            memcpy(dst + i, out, (size_t)(n - i) * sizeof(uint16_t));
        } else {
            _mm_storeu_si128((__m128i *)(dst + i), h);
        }
    }
    return _mm256_movemask_ps(bad);
}

/* NumPy's float16 -> float32 for a NaN: sign, all-ones exponent, the payload shifted up. */
static uint32_t f16_nan_bits(uint16_t h) {
    return ((uint32_t)(h & 0x8000u) << 16) | 0x7F800000u | ((uint32_t)(h & 0x03FFu) << 13);
}

__attribute__((target("avx,f16c")))
static int widen_f16(const void *src_, void *dst_, Py_ssize_t n) {
    const uint16_t *src = src_;
    float *dst = dst_;
    const __m128i magnitude = _mm_set1_epi16(0x7FFF), inf = _mm_set1_epi16(0x7C00);
    __m128i nan = _mm_setzero_si128();
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(src + i));
        nan = _mm_or_si128(nan, _mm_cmpgt_epi16(_mm_and_si128(h, magnitude), inf));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
    if (i < n) {  /* the ragged end, through a zero-padded copy */
        uint16_t tail[8] = {0};
        float out[8];
        memcpy(tail, src + i, (size_t)(n - i) * sizeof(uint16_t));
        _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)tail)));
        memcpy(dst + i, out, (size_t)(n - i) * sizeof(float));
    }
    if (_mm_movemask_epi8(nan) || i < n) {  /* the instruction quiets signalling NaNs */
        for (Py_ssize_t j = _mm_movemask_epi8(nan) ? 0 : i; j < n; j++) {
            if ((src[j] & 0x7FFFu) > 0x7C00u) {
                uint32_t bits = f16_nan_bits(src[j]);
                memcpy(dst + j, &bits, 4);
            }
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------ bfloat16 */
/* float32 bits -> bfloat16 bits, round to nearest even: + 0x7FFF + the lowest kept bit, keep
 * the top half (subnormals and overflow to infinity come out right). Nonzero when a NaN. */
static uint16_t bf16_round(uint32_t u) { return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16); }

__attribute__((target("avx2")))
static Py_ssize_t narrow_bf16_avx2(const uint32_t *src, uint16_t *dst, Py_ssize_t n, int *flag) {
    const __m256i magnitude = _mm256_set1_epi32(0x7FFFFFFF), inf = _mm256_set1_epi32(0x7F800000);
    const __m256i half = _mm256_set1_epi32(0x7FFF), one = _mm256_set1_epi32(1);
    __m256i bad = _mm256_setzero_si256();
    Py_ssize_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(src + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(src + i + 8));
        bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(_mm256_and_si256(a, magnitude), inf));
        bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(_mm256_and_si256(b, magnitude), inf));
        a = _mm256_add_epi32(_mm256_add_epi32(a, half), _mm256_and_si256(_mm256_srli_epi32(a, 16), one));
        b = _mm256_add_epi32(_mm256_add_epi32(b, half), _mm256_and_si256(_mm256_srli_epi32(b, 16), one));
        /* arithmetic shifts make the top halves int16 values, which the pack keeps exactly; the
         * pack works per 128-bit lane, the permute puts the lanes back in order */
        __m256i p = _mm256_packs_epi32(_mm256_srai_epi32(a, 16), _mm256_srai_epi32(b, 16));
        _mm256_storeu_si256((__m256i *)(dst + i), _mm256_permute4x64_epi64(p, 0xD8));
    }
    *flag |= _mm256_movemask_epi8(bad);
    return i;
}

static Py_ssize_t narrow_bf16_sse2(const uint32_t *src, uint16_t *dst, Py_ssize_t n, int *flag) {
    const __m128i magnitude = _mm_set1_epi32(0x7FFFFFFF), inf = _mm_set1_epi32(0x7F800000);
    const __m128i half = _mm_set1_epi32(0x7FFF), one = _mm_set1_epi32(1);
    __m128i bad = _mm_setzero_si128();
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(src + i + 4));
        bad = _mm_or_si128(bad, _mm_cmpgt_epi32(_mm_and_si128(a, magnitude), inf));
        bad = _mm_or_si128(bad, _mm_cmpgt_epi32(_mm_and_si128(b, magnitude), inf));
        a = _mm_add_epi32(_mm_add_epi32(a, half), _mm_and_si128(_mm_srli_epi32(a, 16), one));
        b = _mm_add_epi32(_mm_add_epi32(b, half), _mm_and_si128(_mm_srli_epi32(b, 16), one));
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm_packs_epi32(_mm_srai_epi32(a, 16), _mm_srai_epi32(b, 16)));
    }
    *flag |= _mm_movemask_epi8(bad);
    return i;
}

static int narrow_bf16(const void *src_, void *dst_, Py_ssize_t n) {
    const uint32_t *src = src_;
    uint16_t *dst = dst_;
    int flag = 0;
    Py_ssize_t i = (has_avx2 ? narrow_bf16_avx2 : narrow_bf16_sse2)(src, dst, n, &flag);
    for (; i < n; i++) {
        flag |= (src[i] & 0x7FFFFFFFu) > 0x7F800000u;
        dst[i] = bf16_round(src[i]);
    }
    return flag;
}

/* bfloat16 -> float32: the bits moved to the top half (exact for every pattern, as ml_dtypes). */
static int widen_bf16(const void *src_, void *dst_, Py_ssize_t n) {
    const uint16_t *src = src_;
    uint32_t *dst = dst_;
    const __m128i zero = _mm_setzero_si128();
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(src + i));
        _mm_storeu_si128((__m128i *)(dst + i), _mm_unpacklo_epi16(zero, h));
        _mm_storeu_si128((__m128i *)(dst + i + 4), _mm_unpackhi_epi16(zero, h));
    }
    for (; i < n; i++)
        dst[i] = (uint32_t)src[i] << 16;
    return 0;
}
#endif

/* (src, dst) of src_item- and dst_item-byte elements, converted by fn with the GIL released;
 * returns fn's flag as "the conversion is complete" (True) or "redo it with NumPy" (False). */
static PyObject *convert(PyObject *args, convert_fn fn, Py_ssize_t src_item, Py_ssize_t dst_item) {
    PyObject *s, *d;
    Py_buffer src, dst;
    if (!PyArg_ParseTuple(args, "OO", &s, &d))
        return NULL;
    if (PyObject_GetBuffer(s, &src, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(d, &dst, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&src);
        return NULL;
    }
    Py_ssize_t n = src.len / src_item;
    int flag = 1;
    if (src.len % src_item || dst.len != n * dst_item) {
        PyErr_SetString(PyExc_ValueError, "_f16c: source and destination sizes do not match");
    } else {
#ifdef MINIGRAD_X86
        Py_BEGIN_ALLOW_THREADS
        flag = fn(src.buf, dst.buf, n);
        Py_END_ALLOW_THREADS
#else
        (void)fn;
#endif
    }
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    if (PyErr_Occurred())
        return NULL;
    return PyBool_FromLong(flag == 0);
}

#ifdef MINIGRAD_X86
#define FN(name) name
#else
#define FN(name) NULL
#endif

static PyObject *py_narrow(PyObject *self, PyObject *args) { return convert(args, FN(narrow_f16), 4, 2); }
static PyObject *py_widen(PyObject *self, PyObject *args) { return convert(args, FN(widen_f16), 2, 4); }
static PyObject *py_narrow_bf16(PyObject *self, PyObject *args) {
    return convert(args, FN(narrow_bf16), 4, 2);
}
static PyObject *py_widen_bf16(PyObject *self, PyObject *args) {
    return convert(args, FN(widen_bf16), 2, 4);
}

/* ------------------------------------------------------------------------------- ReLU */
/* float16/bfloat16 bits read as int16: numbers >= +0 and NaNs with the sign bit clear are >= 0;
 * a negative number with magnitude bits m is m - 0x8000, so -0 is INT16_MIN and -inf is
 * `floor` = inf_bits - 0x8000; what lies in (floor, 0) are the NaNs with the sign bit set. Plain
 * loops the compiler vectorises 8 or 16 wide. */

/* relu(x): x where it is >= +0, a NaN or -0 (PyTorch's clamp keeps x at the bound), else +0. */
static void relu16(const int16_t *restrict x, int16_t *restrict out, Py_ssize_t n,
                   int16_t floor) {
    for (Py_ssize_t i = 0; i < n; i++) {
        const int16_t v = x[i];
        out[i] = (int16_t)(v & -(int16_t)((v > floor) | (v == INT16_MIN)));
    }
}

/* threshold_backward: 0 where y <= 0 (either zero, a negative number), else gy (NaN y too). */
static void relu_grad16(const int16_t *restrict gy, const int16_t *restrict y,
                        int16_t *restrict out, Py_ssize_t n, int16_t floor) {
    for (Py_ssize_t i = 0; i < n; i++) {
        const int16_t v = y[i], g = gy[i];  /* read unconditionally, so the loop vectorises */
        out[i] = (int16_t)(g & -(int16_t)((v > floor) & (v != 0)));
    }
}

/* relu(x, out, inf_bits) and relu_grad(gy, y, out, inf_bits): C-contiguous 2-byte arrays of one
 * length. */
static PyObject *relu_call(PyObject *args, int with_gy) {
    PyObject *objs[3] = {NULL, NULL, NULL};
    int inf_bits;
    if (with_gy ? !PyArg_ParseTuple(args, "OOOi", &objs[0], &objs[1], &objs[2], &inf_bits)
                : !PyArg_ParseTuple(args, "OOi", &objs[1], &objs[2], &inf_bits))
        return NULL;
    Py_buffer bufs[3];
    int got = 0;
    for (int i = 0; i < 3; i++) {
        if (objs[i] == NULL)
            continue;
        int flags = PyBUF_C_CONTIGUOUS | (i == 2 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[i], &bufs[i], flags) < 0)
            break;
        got |= 1 << i;
    }
    const int want = with_gy ? 7 : 6;
    if (got == want) {
        Py_ssize_t len = bufs[2].len;
        if (bufs[1].len != len || (with_gy && bufs[0].len != len) || len % 2) {
            PyErr_SetString(PyExc_ValueError, "_f16c.relu: array sizes do not match");
        } else {
            const int16_t floor = (int16_t)(inf_bits - 0x8000);
            Py_BEGIN_ALLOW_THREADS
            if (with_gy)
                relu_grad16(bufs[0].buf, bufs[1].buf, bufs[2].buf, len / 2, floor);
            else
                relu16(bufs[1].buf, bufs[2].buf, len / 2, floor);
            Py_END_ALLOW_THREADS
        }
    }
    for (int i = 0; i < 3; i++)
        if (got & (1 << i))
            PyBuffer_Release(&bufs[i]);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}
static PyObject *py_relu(PyObject *self, PyObject *args) { return relu_call(args, 0); }
static PyObject *py_relu_grad(PyObject *self, PyObject *args) { return relu_call(args, 1); }

static PyObject *py_available(PyObject *self, PyObject *unused) {
#ifdef MINIGRAD_X86
    return PyBool_FromLong(has_f16c);
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef methods[] = {
    {"available", py_available, METH_NOARGS,
     "available() -> bool: this CPU has F16C and AVX (else the functions must not be used)."},
    {"narrow", py_narrow, METH_VARARGS,
     "narrow(src_float32, dst_float16) -> bool: float32 to float16, rounded to nearest "
     "even; False when an element was inf, NaN or overflowed (redo it with NumPy)."},
    {"widen", py_widen, METH_VARARGS,
     "widen(src_float16, dst_float32) -> True: float16 to float32, as NumPy converts."},
    {"narrow_bf16", py_narrow_bf16, METH_VARARGS,
     "narrow_bf16(src_float32, dst_bfloat16) -> bool: float32 to bfloat16, rounded to "
     "nearest even; False when an element was NaN (redo it with ml_dtypes)."},
    {"widen_bf16", py_widen_bf16, METH_VARARGS,
     "widen_bf16(src_bfloat16, dst_float32) -> True: bfloat16 to float32 (a shift)."},
    {"relu", py_relu, METH_VARARGS,
     "relu(x, out, inf_bits): ReLU on float16/bfloat16 bits (inf_bits: 0x7C00 or 0x7F80); "
     "any CPU."},
    {"relu_grad", py_relu_grad, METH_VARARGS,
     "relu_grad(gy, y, out, inf_bits): 0 where the ReLU output y <= 0, else gy; any CPU."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_f16c",
                                    "float16/bfloat16 <-> float32 conversion", -1, methods};

PyMODINIT_FUNC PyInit__f16c(void) {
#ifdef MINIGRAD_X86
    detect_cpu();
#endif
    return PyModule_Create(&module);
}
