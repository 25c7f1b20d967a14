/* The `_parallel` extension: CPU kernels that split their work over persistent worker threads
 * (the bfloat16 GEMM of _bf16_gemm.c, col2im of _col2im.c), and the pool they share.
 *
 * Starting a POSIX thread per call cost about 60 us on the development machine, as much as a
 * LeNet-5 GEMM, so the workers outlive the calls: a worker spins a while after each part (the
 * kernels of a training step come every few hundred microseconds), then sleeps on a condition
 * variable. One caller at a time uses the pool; a second one, from another Python thread, runs
 * its parts alone. After fork() the child starts its own workers. One pool for all kernels, so
 * that no two sets of workers spin against each other.
 */
#include "_parallel.h"

#ifdef MINIGRAD_X86
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define SPIN_NS 200000  /* a worker spins this long for the next part before it sleeps */

typedef struct {
    pthread_t id;
    mg_part_fn fn;
    void *ctx;
    int part, parts;
    atomic_int state;  /* 0 idle, 1 a part is posted, 2 the part is done */
} worker;

static worker workers[MG_MAX_PARTS];
static int n_workers;
static pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_wake = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *worker_loop(void *arg) {
    worker *w = arg;
    for (;;) {
        const long long until = now_ns() + SPIN_NS;
        int spins = 0;
        while (atomic_load_explicit(&w->state, memory_order_acquire) != 1) {
            _mm_pause();
            if (++spins % 256 == 0 && now_ns() > until) {
                pthread_mutex_lock(&pool_mutex);
                while (atomic_load_explicit(&w->state, memory_order_acquire) != 1)
                    pthread_cond_wait(&pool_wake, &pool_mutex);
                pthread_mutex_unlock(&pool_mutex);
            }
        }
        w->fn(w->ctx, w->part, w->parts);
        atomic_store_explicit(&w->state, 2, memory_order_release);
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

/* Workers for `want` extra parts (fewer if threads cannot be started); returns how many. */
static int ensure_workers(int want) {
    static int registered;
    if (!registered) {
        pthread_atfork(NULL, NULL, forget_workers);
        registered = 1;
    }
    while (n_workers < want) {
        worker *w = &workers[n_workers];
        atomic_store(&w->state, 0);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 1 << 20);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        const int rc = pthread_create(&w->id, &attr, worker_loop, w);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        n_workers++;
    }
    return n_workers < want ? n_workers : want;
}

void mg_parallel(mg_part_fn fn, void *ctx, int parts) {
    if (parts > MG_MAX_PARTS)
        parts = MG_MAX_PARTS;
    if (parts < 1)
        parts = 1;
    int helpers = 0, locked = 0;
    if (parts > 1 && pthread_mutex_trylock(&busy) == 0) {
        locked = 1;
        helpers = ensure_workers(parts - 1);
    }
    for (int h = 0; h < helpers; h++) {
        worker *w = &workers[h];
        w->fn = fn;
        w->ctx = ctx;
        w->part = h + 1;
        w->parts = parts;
        atomic_store_explicit(&w->state, 1, memory_order_release);
    }
    if (helpers) {  /* wake the sleepers (no system call when none sleeps) */
        pthread_mutex_lock(&pool_mutex);
        pthread_cond_broadcast(&pool_wake);
        pthread_mutex_unlock(&pool_mutex);
    }
    fn(ctx, 0, parts);
    for (int p = helpers + 1; p < parts; p++)  /* no worker to be had: the part runs here */
        fn(ctx, p, parts);
    for (int h = 0; h < helpers; h++) {
        while (atomic_load_explicit(&workers[h].state, memory_order_acquire) != 2)
            _mm_pause();
        atomic_store_explicit(&workers[h].state, 0, memory_order_relaxed);
    }
    if (locked)
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
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_parallel",
                                    "CPU kernels over a pool of worker threads (setup.py).", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__parallel(void) {
    mg_detect_bf16();
    return PyModule_Create(&module);
}
