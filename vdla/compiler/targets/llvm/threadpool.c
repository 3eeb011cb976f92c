/* The thread pool behind vdla_parallel_launch, the runtime call of JIT-compiled parallel loops.
 *
 * A parallel loop is outlined by the code generator into task(closure, j, m), which runs the
 * j-th of m equal chunks of the loop's n iterations. vdla_parallel_launch(task, closure, n)
 * cuts the loop into m >= k chunks for k = min(threads, n) threads: the caller and k - 1
 * persistent workers each take their own chunk first, then the remaining ones from a shared
 * counter, so a thread slowed down by other load on the machine gets fewer chunks.
 *
 * Hand-over: the launcher publishes one 64-bit word (a sequence number and k) after writing
 * the job; a worker that sees a new word joins if its id is below k. Idle workers spin on the
 * word for a short while (back-to-back regions find them awake), then sleep on a condition
 * variable; the launcher signals it only when someone sleeps. The caller waits for the
 * workers the same way. A launch from inside a task (a nested region), or from a second
 * thread while the pool is busy, runs serially in its caller. After fork() the child has no
 * workers: the pool is reset and starts new ones at its first launch.
 *
 * Built by vdla/compiler/targets/llvm/threadpool.py with the system compiler as C, or as C++
 * when only a C++ compiler exists (so: GCC/Clang __atomic builtins, no implicit void* casts).
 */

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#ifdef __cplusplus
#define VDLA_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define VDLA_EXPORT __attribute__((visibility("default")))
#endif

#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__) || defined(__arm__)
#define CPU_RELAX() __asm__ __volatile__("yield" ::: "memory")
#else
#define CPU_RELAX() __asm__ __volatile__("" ::: "memory")
#endif

#define LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define ADD(p, v) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)
#define FETCH_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)

/* Interface version: threadpool.py checks it (a library built from other sources is refused). */
#define VDLA_POOL_ABI 1
/* k travels in the low 16 bits of the published word. */
#define MAX_THREADS 4096

typedef void (*vdla_task)(void *closure, int64_t j, int64_t m);

static struct {
    /* settings (set from Python; read at each launch) */
    int threads;
    int chunks_per_thread;
    int64_t spin_ns;
    /* the job: written by the launcher before it publishes `word` */
    vdla_task task;
    void *closure;
    int64_t m;
    int64_t next __attribute__((aligned(64)));      /* the next unclaimed chunk */
    int64_t remaining __attribute__((aligned(64))); /* workers of the job still running */
    uint64_t word __attribute__((aligned(64)));     /* (sequence << 16) | k: what idle workers watch */
    /* sleeping */
    int sleepers;
    int caller_waiting;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_cond_t done;
    /* the launcher's side */
    int busy;     /* 1 while a launch owns the workers */
    int nworkers; /* workers started in this process (ids 1..nworkers) */
    /* counters (tests and benchmarks read them) */
    int64_t n_parallel, n_serial_nested, n_serial_busy;
} pool; /* settings from pool_init */

static __thread int inside_task; /* this thread is running a chunk: nested regions run serially */

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Spin until *p != old or spin_ns pass; returns the last value seen. */
static uint64_t spin_while_u64(uint64_t *p, uint64_t old) {
    int64_t deadline = 0;
    for (unsigned i = 0;; i++) {
        uint64_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
        if (v != old) return v;
        CPU_RELAX();
        if ((i & 63) == 63) {
            int64_t t = now_ns();
            if (deadline == 0) deadline = t + pool.spin_ns;
            else if (t >= deadline) return v;
        }
    }
}

static void run_chunks(int64_t first) {
    vdla_task task = pool.task;
    void *closure = pool.closure;
    int64_t m = pool.m;
    inside_task = 1;
    task(closure, first, m);
    for (int64_t j; (j = FETCH_ADD(&pool.next, 1)) < m;) task(closure, j, m);
    inside_task = 0;
}

typedef struct {
    int id;
    uint64_t seen;
} worker_arg;

static void *worker_main(void *p) {
    worker_arg a = *(worker_arg *)p;
    free(p);
    for (;;) {
        uint64_t w = spin_while_u64(&pool.word, a.seen);
        if (w == a.seen) {
            pthread_mutex_lock(&pool.mu);
            ADD(&pool.sleepers, 1);
            while ((w = LOAD(&pool.word)) == a.seen) pthread_cond_wait(&pool.wake, &pool.mu);
            ADD(&pool.sleepers, -1);
            pthread_mutex_unlock(&pool.mu);
        }
        a.seen = w;
        if (a.id >= (int)(w & 0xffff)) continue; /* not needed for this job */
        run_chunks(a.id);
        if (ADD(&pool.remaining, -1) == 0 && LOAD(&pool.caller_waiting)) {
            pthread_mutex_lock(&pool.mu);
            pthread_cond_broadcast(&pool.done);
            pthread_mutex_unlock(&pool.mu);
        }
    }
    return NULL;
}

/* Start workers up to `want` (ids 1..want); fewer if the system refuses threads. */
static void start_workers(int want) {
    if (pool.nworkers >= want) return;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* kernels keep buffers up to 256 KiB on the stack: give workers the main thread's stack size */
    struct rlimit rl;
    size_t stack = 8u << 20;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > stack)
        stack = (size_t)rl.rlim_cur;
    pthread_attr_setstacksize(&attr, stack);
    while (pool.nworkers < want) {
        worker_arg *a = (worker_arg *)malloc(sizeof(worker_arg));
        if (a == NULL) break;
        a->id = pool.nworkers + 1;
        a->seen = LOAD(&pool.word);
        pthread_t th;
        if (pthread_create(&th, &attr, worker_main, a) != 0) {
            free(a);
            break;
        }
        pool.nworkers++;
    }
    pthread_attr_destroy(&attr);
}

VDLA_EXPORT void vdla_parallel_launch(vdla_task task, void *closure, int64_t n) {
    if (n <= 0) return;
    int64_t k = LOAD(&pool.threads);
    if (k > n) k = n;
    if (k <= 1 || inside_task) {
        if (k > 1) ADD(&pool.n_serial_nested, 1);
        task(closure, 0, 1);
        return;
    }
    int idle = 0;
    if (!__atomic_compare_exchange_n(&pool.busy, &idle, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        ADD(&pool.n_serial_busy, 1);
        task(closure, 0, 1);
        return;
    }
    start_workers((int)k - 1);
    if (k > pool.nworkers + 1) k = pool.nworkers + 1;
    if (k <= 1) {
        __atomic_store_n(&pool.busy, 0, __ATOMIC_RELEASE);
        task(closure, 0, 1);
        return;
    }
    int64_t m = k * (int64_t)LOAD(&pool.chunks_per_thread);
    if (m > n) m = n;
    pool.task = task;
    pool.closure = closure;
    pool.m = m;
    STORE(&pool.next, k);
    STORE(&pool.remaining, k - 1);
    uint64_t w = ((LOAD(&pool.word) >> 16) + 1) << 16 | (uint64_t)k;
    STORE(&pool.word, w);
    if (LOAD(&pool.sleepers) > 0) {
        pthread_mutex_lock(&pool.mu);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.mu);
    }
    run_chunks(0);
    int64_t deadline = 0;
    for (unsigned i = 0; LOAD(&pool.remaining) > 0; i++) {
        CPU_RELAX();
        if ((i & 63) != 63) continue;
        int64_t t = now_ns();
        if (deadline == 0) deadline = t + pool.spin_ns;
        else if (t >= deadline) {
            pthread_mutex_lock(&pool.mu);
            STORE(&pool.caller_waiting, 1);
            while (LOAD(&pool.remaining) > 0) pthread_cond_wait(&pool.done, &pool.mu);
            STORE(&pool.caller_waiting, 0);
            pthread_mutex_unlock(&pool.mu);
            break;
        }
    }
    ADD(&pool.n_parallel, 1);
    __atomic_store_n(&pool.busy, 0, __ATOMIC_RELEASE);
}

VDLA_EXPORT int vdla_pool_abi(void) { return VDLA_POOL_ABI; }

VDLA_EXPORT int vdla_pool_max_threads(void) { return MAX_THREADS; }

VDLA_EXPORT void vdla_pool_set_num_threads(int n) {
    STORE(&pool.threads, n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n);
}

VDLA_EXPORT int vdla_pool_get_num_threads(void) { return LOAD(&pool.threads); }

VDLA_EXPORT void vdla_pool_set_chunks_per_thread(int c) { STORE(&pool.chunks_per_thread, c < 1 ? 1 : c); }

VDLA_EXPORT void vdla_pool_set_spin_us(int us) { pool.spin_ns = (int64_t)(us < 0 ? 0 : us) * 1000; }

/* counters: workers started in this process, regions run in parallel, nested regions and
   regions that found the pool busy (both run serially) */
VDLA_EXPORT void vdla_pool_stats(int64_t *out4) {
    out4[0] = pool.nworkers;
    out4[1] = LOAD(&pool.n_parallel);
    out4[2] = LOAD(&pool.n_serial_nested);
    out4[3] = LOAD(&pool.n_serial_busy);
}

/* The child of a fork has only the thread that forked: no workers, and the locks may have
   been copied while held. Start afresh (the settings stay). */
static void after_fork_in_child(void) {
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.nworkers = 0;
    pool.sleepers = 0;
    pool.caller_waiting = 0;
    pool.remaining = 0;
    pool.busy = 0;
    pool.n_parallel = pool.n_serial_nested = pool.n_serial_busy = 0;
}

__attribute__((constructor)) static void pool_init(void) {
    pool.threads = 1;
    pool.chunks_per_thread = 4;
    pool.spin_ns = 100000;
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.done, NULL);
    pthread_atfork(NULL, NULL, after_fork_in_child);
}
