/* The `_parallel` extension: CPU kernels that split their work over persistent worker threads
 * (the bfloat16 GEMM of _bf16_gemm.c, col2im of _col2im.c, max pooling of _pool.c), and the
 * pool they share.
 *
 * Starting a POSIX thread per call cost about 60 us on the development machine, as much as a
 * LeNet-5 GEMM, so the workers outlive the calls: a worker spins a while after each job (the
 * kernels of a training step come every few hundred microseconds), then sleeps on a condition
 * variable. The caller works too, and parts go to whoever claims them first. One caller at a
 * time uses the pool; a second one, from another Python thread, runs its parts alone. After
 * fork() the child starts its own workers. One pool for all kernels, so that no two sets of
 * workers spin against each other.
 */
#include "_parallel.h"

#ifdef MINIGRAD_X86
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#define SPIN_NS 200000  /* a worker spins this long for the next job before it sleeps */

/* The job in progress. Parts are claimed, not assigned: the caller and the workers take the
 * next unclaimed part until none is left, so a worker that the OS has not scheduled yet (the
 * machine is shared; OpenBLAS's or OpenMP's threads may be spinning on the other core) delays
 * nothing: the caller runs its parts. `ticket` packs (generation << 16 | parts << 8 | next part)
 * so that a claim for a finished job fails; `fn` and `ctx` are read only after a claim. */
static _Atomic uint64_t ticket;
static atomic_int done;  /* parts of the current job finished */
static mg_part_fn job_fn;
static void *job_ctx;

static pthread_t worker_ids[MG_MAX_PARTS];
static int n_workers;
static pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_wake = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static uint64_t generation(uint64_t v) { return v >> 16; }

/* Claim and run parts of job `gen` until none is left. */
static void run_parts(uint64_t gen) {
    for (;;) {
        uint64_t v = atomic_load_explicit(&ticket, memory_order_acquire);
        const int parts = (int)((v >> 8) & 0xFF), next = (int)(v & 0xFF);
        if (generation(v) != gen || next >= parts)
            return;
        if (!atomic_compare_exchange_weak_explicit(&ticket, &v, v + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        job_fn(job_ctx, next, parts);
        atomic_fetch_add_explicit(&done, 1, memory_order_release);
    }
}

static void *worker_loop(void *arg) {
    (void)arg;
    uint64_t seen = generation(atomic_load(&ticket));
    for (;;) {
        const long long until = now_ns() + SPIN_NS;
        int spins = 0;
        while (generation(atomic_load_explicit(&ticket, memory_order_acquire)) == seen) {
            _mm_pause();
            if (++spins % 256)
                continue;
            if (now_ns() < until) {
                sched_yield();  /* spin politely: BLAS's and other processes' threads go first */
                continue;
            }
            pthread_mutex_lock(&pool_mutex);
            while (generation(atomic_load_explicit(&ticket, memory_order_acquire)) == seen)
                pthread_cond_wait(&pool_wake, &pool_mutex);
            pthread_mutex_unlock(&pool_mutex);
        }
        seen = generation(atomic_load_explicit(&ticket, memory_order_acquire));
        run_parts(seen);
    }
    return NULL;
}

/* The child of a fork() has none of its parent's threads, and a lock (or a condition variable's
 * waiter count) one of them held stays so: start afresh. */
static void forget_workers(void) {
    n_workers = 0;
    pthread_mutex_init(&pool_mutex, NULL);
    pthread_cond_init(&pool_wake, NULL);
    pthread_mutex_init(&busy, NULL);
}

/* At least `want` workers, if threads can be started. */
static void ensure_workers(int want) {
    static int registered;
    if (!registered) {
        pthread_atfork(NULL, NULL, forget_workers);
        registered = 1;
    }
    while (n_workers < want) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 1 << 20);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        const int rc = pthread_create(&worker_ids[n_workers], &attr, worker_loop, NULL);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        n_workers++;
    }
}

void mg_parallel(mg_part_fn fn, void *ctx, int parts) {
    if (parts > MG_MAX_PARTS)
        parts = MG_MAX_PARTS;
    if (parts < 2 || pthread_mutex_trylock(&busy) != 0) {  /* alone */
        for (int p = 0; p < (parts < 1 ? 1 : parts); p++)
            fn(ctx, p, parts < 1 ? 1 : parts);
        return;
    }
    ensure_workers(parts - 1);
    job_fn = fn;
    job_ctx = ctx;
    atomic_store_explicit(&done, 0, memory_order_relaxed);
    const uint64_t gen = generation(atomic_load(&ticket)) + 1;
    atomic_store_explicit(&ticket, gen << 16 | (uint64_t)parts << 8, memory_order_release);
    pthread_mutex_lock(&pool_mutex);  /* wake the sleepers (no system call when none sleeps) */
    pthread_cond_broadcast(&pool_wake);
    pthread_mutex_unlock(&pool_mutex);
    run_parts(gen);
    while (atomic_load_explicit(&done, memory_order_acquire) < parts)
        _mm_pause();  /* parts a worker claimed and is finishing */
    pthread_mutex_unlock(&busy);
}
#else
void mg_parallel(mg_part_fn fn, void *ctx, int parts) {
    for (int p = 0; p < parts; p++)
        fn(ctx, p, parts);
}
#endif /* MINIGRAD_X86 */

/* ------------------------------------------------------------------------------- Python */
static PyObject *bf16_available(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    return PyBool_FromLong(mg_cpu_bf16);
}

static PyMethodDef methods[] = {
    {"bf16_gemm", mg_py_bf16_gemm, METH_VARARGS,
     "bf16_gemm(a, b, out, threads, form) -> None\n\n"
     "out (m, n) float32, C-contiguous = a (m, k) @ b (k, n), bfloat16 bits as uint16 arrays of\n"
     "any strides. form: 0 chooses, 1 packed, 2 dot products (needs unit k strides in both)."},
    {"bf16_available", bf16_available, METH_NOARGS,
     "Whether this CPU runs bf16_gemm (AVX512_BF16)."},
    {"col2im", mg_py_col2im, METH_VARARGS,
     "col2im(cols, out, geometry, threads) -> None\n\n"
     "The convolution data gradient's window sums: cols (C, kh, kw, OH, OW, N) float32,\n"
     "C-contiguous -> out (N, C, H, W) float32, C-contiguous; geometry = (N, C, H, W, kh, kw,\n"
     "OH, OW, sh, sw, ph, pw, dh, dw)."},
    {"pool_scan", mg_py_pool_scan, METH_VARARGS,
     "pool_scan(kind, x, best, idx, geometry, threads): each window's maximum into best and its\n"
     "kernel offset into idx (int8); kind 'f32', 'f64', 'f16' or 'bf16'; geometry (planes, Hp,\n"
     "Wp, OH, OW, kh, kw, sh, sw, dh, dw)."},
    {"pool_scatter", mg_py_pool_scatter, METH_VARARGS,
     "pool_scatter(kind, gy, idx, acc, geometry, threads): each gradient stored ('store2/4/8')\n"
     "or added ('add_f32/f64') at its window's maximum in the zeroed acc."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_parallel",
                                    "CPU kernels over a pool of worker threads (setup.py).", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__parallel(void) {
    mg_detect_bf16();
    return PyModule_Create(&module);
}
