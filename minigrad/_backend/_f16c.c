/* float16 <-> float32 conversion with the x86 F16C instructions, for lowp_cpu.py.
 *
 * NumPy's float16 casts convert one element at a time (numpy 2.4's wheels: about 2.5 ns per
 * element float32 -> float16 on the development machine); VCVTPS2PH/VCVTPH2PS convert eight
 * per instruction and round to nearest even as NumPy does, so finite results are the same bits.
 * Where they would differ, the caller is told and converts with NumPy instead:
 *   narrow: an infinity, a NaN, or a value that overflows to infinity (NumPy warns then, and
 *           keeps NaN payloads its own way);
 *   widen:  NaN inputs are converted here the way NumPy does (payload shifted, not quieted).
 * Optional: setup.py builds this module when a C compiler is there; without it (or without
 * F16C in the CPU, or off x86-64) minigrad uses its NumPy kernels. The GIL is released while
 * converting. Arrays come in through the buffer protocol as C-contiguous uint32/uint16 views.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MINIGRAD_X86 1
#include <cpuid.h>
#include <immintrin.h>

static int cpu_has_f16c(void) {
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    const unsigned int osxsave = 1u << 27, avx = 1u << 28, f16c = 1u << 29;
    if ((c & (osxsave | avx | f16c)) != (osxsave | avx | f16c))
        return 0;
    unsigned int lo, hi;  /* the OS must save the YMM registers (XCR0 bits 1 and 2) */
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 6u) == 6u;
}

/* Returns nonzero when some |x| >= 65520 (rounds to infinity) or is NaN. */
__attribute__((target("avx,f16c")))
static int narrow_f16c(const float *src, uint16_t *dst, Py_ssize_t n) {
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256 limit = _mm256_set1_ps(65520.0f);
    __m256 bad = _mm256_setzero_ps();
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(src + i);
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(_mm256_and_ps(v, absmask), limit, _CMP_NLT_UQ));
        _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    if (i < n) {
        float tail[8] = {0};
        uint16_t out[8];
        memcpy(tail, src + i, (size_t)(n - i) * sizeof(float));
        __m256 v = _mm256_loadu_ps(tail);
        bad = _mm256_or_ps(bad, _mm256_cmp_ps(_mm256_and_ps(v, absmask), limit, _CMP_NLT_UQ));
        _mm_storeu_si128((__m128i *)out, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
        memcpy(dst + i, out, (size_t)(n - i) * sizeof(uint16_t));
    }
    return _mm256_movemask_ps(bad);
}

/* NumPy's float16 -> float32 for a NaN: sign, all-ones exponent, the payload shifted up. */
static uint32_t nan_bits(uint16_t h) {
    return ((uint32_t)(h & 0x8000u) << 16) | 0x7F800000u | ((uint32_t)(h & 0x03FFu) << 13);
}

__attribute__((target("avx,f16c")))
static void widen_f16c(const uint16_t *src, float *dst, Py_ssize_t n) {
    const __m128i magnitude = _mm_set1_epi16(0x7FFF), inf = _mm_set1_epi16(0x7C00);
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(src + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
        if (_mm_movemask_epi8(_mm_cmpgt_epi16(_mm_and_si128(h, magnitude), inf))) {
            for (int j = 0; j < 8; j++)  /* the hardware quiets signalling NaNs */
                if ((src[i + j] & 0x7FFFu) > 0x7C00u)
                    memcpy(dst + i + j, &(uint32_t){nan_bits(src[i + j])}, 4);
        }
    }
    if (i < n) {
        uint16_t tail[8] = {0};
        float out[8];
        memcpy(tail, src + i, (size_t)(n - i) * sizeof(uint16_t));
        _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)tail)));
        for (Py_ssize_t j = 0; j < n - i; j++) {
            if ((tail[j] & 0x7FFFu) > 0x7C00u)
                memcpy(out + j, &(uint32_t){nan_bits(tail[j])}, 4);
        }
        memcpy(dst + i, out, (size_t)(n - i) * sizeof(float));
    }
}
/* float32 -> bfloat16, round to nearest even on the bits (bfloat16 is float32's top half, so
 * subnormals and overflow to infinity come out right); SSE2, which every x86-64 CPU has.
 * Returns nonzero when an element is NaN (ml_dtypes makes every NaN its quiet NaN). */
static int narrow_bf16(const uint32_t *src, uint16_t *dst, Py_ssize_t n) {
    const __m128i magnitude = _mm_set1_epi32(0x7FFFFFFF), inf = _mm_set1_epi32(0x7F800000);
    const __m128i half = _mm_set1_epi32(0x7FFF), one = _mm_set1_epi32(1);
    __m128i bad = _mm_setzero_si128();
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(src + i + 4));
        bad = _mm_or_si128(bad, _mm_cmpgt_epi32(_mm_and_si128(a, magnitude), inf));
        bad = _mm_or_si128(bad, _mm_cmpgt_epi32(_mm_and_si128(b, magnitude), inf));
        /* + 0x7FFF + the lowest kept bit: ties go to the even neighbour */
        a = _mm_add_epi32(_mm_add_epi32(a, half), _mm_and_si128(_mm_srli_epi32(a, 16), one));
        b = _mm_add_epi32(_mm_add_epi32(b, half), _mm_and_si128(_mm_srli_epi32(b, 16), one));
        /* arithmetic shifts make the top halves int16 values, which the pack keeps exactly */
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm_packs_epi32(_mm_srai_epi32(a, 16), _mm_srai_epi32(b, 16)));
    }
    int flag = _mm_movemask_epi8(bad);
    for (; i < n; i++) {
        uint32_t u = src[i];
        flag |= (u & 0x7FFFFFFFu) > 0x7F800000u;
        dst[i] = (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
    }
    return flag;
}
#endif

static int buffers(PyObject *args, Py_buffer *src, Py_buffer *dst, Py_ssize_t src_item,
                   Py_ssize_t dst_item, Py_ssize_t *n) {
    PyObject *s, *d;
    if (!PyArg_ParseTuple(args, "OO", &s, &d))
        return -1;
    if (PyObject_GetBuffer(s, src, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (PyObject_GetBuffer(d, dst, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(src);
        return -1;
    }
    *n = src->len / src_item;
    if (src->len % src_item || dst->len != *n * dst_item) {
        PyBuffer_Release(src);
        PyBuffer_Release(dst);
        PyErr_SetString(PyExc_ValueError, "_f16c: source and destination sizes do not match");
        return -1;
    }
    return 0;
}

static PyObject *py_narrow(PyObject *self, PyObject *args) {
    Py_buffer src, dst;
    Py_ssize_t n;
    int flag = 1;
    if (buffers(args, &src, &dst, 4, 2, &n) < 0)
        return NULL;
#ifdef MINIGRAD_X86
    Py_BEGIN_ALLOW_THREADS
    flag = narrow_f16c((const float *)src.buf, (uint16_t *)dst.buf, n);
    Py_END_ALLOW_THREADS
#endif
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    return PyBool_FromLong(flag == 0);
}

static PyObject *py_narrow_bf16(PyObject *self, PyObject *args) {
    Py_buffer src, dst;
    Py_ssize_t n;
    int flag = 1;
    if (buffers(args, &src, &dst, 4, 2, &n) < 0)
        return NULL;
#ifdef MINIGRAD_X86
    Py_BEGIN_ALLOW_THREADS
    flag = narrow_bf16((const uint32_t *)src.buf, (uint16_t *)dst.buf, n);
    Py_END_ALLOW_THREADS
#endif
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    return PyBool_FromLong(flag == 0);
}

static PyObject *py_widen(PyObject *self, PyObject *args) {
    Py_buffer src, dst;
    Py_ssize_t n;
    if (buffers(args, &src, &dst, 2, 4, &n) < 0)
        return NULL;
#ifdef MINIGRAD_X86
    Py_BEGIN_ALLOW_THREADS
    widen_f16c((const uint16_t *)src.buf, (float *)dst.buf, n);
    Py_END_ALLOW_THREADS
#endif
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    Py_RETURN_NONE;
}

static PyObject *py_available(PyObject *self, PyObject *unused) {
#ifdef MINIGRAD_X86
    return PyBool_FromLong(cpu_has_f16c());
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef methods[] = {
    {"available", py_available, METH_NOARGS,
     "available() -> bool: this CPU converts with F16C (else the functions must not be used)."},
    {"narrow", py_narrow, METH_VARARGS,
     "narrow(src_uint32, dst_uint16) -> bool: float32 bits to float16 bits, rounded to nearest "
     "even; False when an element was inf, NaN or overflowed (redo it with NumPy)."},
    {"narrow_bf16", py_narrow_bf16, METH_VARARGS,
     "narrow_bf16(src_uint32, dst_uint16) -> bool: float32 bits to bfloat16 bits, rounded to "
     "nearest even; False when an element was NaN (redo it with ml_dtypes)."},
    {"widen", py_widen, METH_VARARGS,
     "widen(src_uint16, dst_uint32): float16 bits to float32 bits, exactly as NumPy converts."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_f16c",
                                    "float16 <-> float32 conversion with F16C", -1, methods};

PyMODINIT_FUNC PyInit__f16c(void) { return PyModule_Create(&module); }
