/* The thread pool behind vdla_parallel_launch, the runtime call of JIT-compiled parallel loops.
 *
 * A parallel loop is outlined by the code generator into task(closure, j, m), which runs the
 * j-th of m equal chunks of the loop's n iterations. vdla_parallel_launch(task, closure, n)
 * cuts the loop into m chunks (chunks_per_thread per thread, at most n) for k = min(threads, n)
 * threads: the caller and k - 1 persistent workers claim chunks from a shared counter until
 * none is left, and the caller returns when every chunk is done. A thread that runs late (its
 * core busy with another process, or shared with the caller) claims fewer chunks, or none:
 * nobody waits for a thread that has not started, only for chunks already claimed.
 *
 * Hand-over: the launcher writes the job, then publishes one 64-bit word (a sequence number
 * and k); a worker that sees a new word joins if its id is below k. Chunks are claimed with a
 * compare-and-swap on (sequence, next chunk), so a worker that wakes after its job is over
 * claims nothing of the next one (it read that job's fields as a seqlock reader: the claim
 * validates them). Idle workers spin on the word for a short while (back-to-back regions find
 * them awake), yielding the core now and then, then sleep on a condition variable, which the
 * launcher signals only when someone sleeps. The caller waits for the last chunks the same
 * way. A launch from inside a task (a nested region), or from a second thread while the pool
 * is busy, runs serially in its caller. After fork() the child has no workers: the pool is
 * reset and starts new ones at its first launch.
 *
 * Kernel workspaces: vdla_workspace_alloc/free are what a kernel's large intermediate buffers
 * (a padded input, Winograd's transformed tiles) are allocated with. A freed buffer is kept for
 * the next call asking for the same size (at most WS_SLOTS buffers and WS_MAX_BYTES): malloc
 * hands blocks this large out as fresh mappings or trims them back to the system, and touching
 * the new pages on every call cost more than the kernel (a 3 MB buffer: 4-5 ms of page faults
 * against a 1.3 ms convolution), depending on what the process had freed before.
 *
 * Built by vdla/compiler/targets/llvm/threadpool.py with the system compiler as C, or as C++
 * when only a C++ compiler exists (so: GCC/Clang __atomic builtins, no implicit void* casts).
 */

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
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
#define RELAXED_LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define RELAXED_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

/* k travels in the low 16 bits of the published word */
#define MAX_THREADS 4096
/* pause instructions between two looks at the clock (and sched_yield calls) while spinning */
#define SPIN_BATCH 64

typedef void (*vdla_task)(void *closure, int64_t j, int64_t m);

static struct {
    /* settings (set from Python, read at each launch) */
    int threads;
    int chunks_per_thread;
    int64_t spin_ns;
    /* the job, written by the launcher between invalidating `next` and publishing `word` */
    vdla_task task;
    void *closure;
    int64_t m;
    uint64_t next __attribute__((aligned(64))); /* (sequence & 0xffffffff) << 32 | next chunk */
    int64_t done __attribute__((aligned(64)));  /* chunks of the current job finished */
    uint64_t word __attribute__((aligned(64))); /* sequence << 16 | k: what idle workers watch */
    /* sleeping */
    int sleepers;
    int caller_waiting;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_cond_t finished;
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

/* Spin until `cond` holds or spin_ns pass, yielding the core every SPIN_BATCH pauses (the
   thread we wait for may be waiting for this core). */
#define SPIN_UNTIL(cond)                                                      \
    do {                                                                      \
        int64_t deadline_ = 0;                                                \
        for (unsigned i_ = 1; !(cond); i_++) {                                \
            CPU_RELAX();                                                      \
            if (i_ % SPIN_BATCH) continue;                                    \
            int64_t t_ = now_ns();                                            \
            if (deadline_ == 0) deadline_ = t_ + RELAXED_LOAD(&pool.spin_ns); \
            else if (t_ >= deadline_) break;                                  \
            sched_yield();                                                    \
        }                                                                     \
    } while (0)

/* Claim the next chunk of job `seq`; -1 when none is left or the job is over. */
static int64_t claim(uint32_t seq, int64_t m) {
    uint64_t cur = LOAD(&pool.next);
    for (;;) {
        if ((uint32_t)(cur >> 32) != seq || (int64_t)(cur & 0xffffffffu) >= m) return -1;
        if (__atomic_compare_exchange_n(&pool.next, &cur, cur + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
            return (int64_t)(cur & 0xffffffffu);
    }
}

/* Run chunks of job `seq` until none is left. */
static void run_chunks(uint32_t seq) {
    vdla_task task = RELAXED_LOAD(&pool.task);
    void *closure = RELAXED_LOAD(&pool.closure);
    int64_t m = RELAXED_LOAD(&pool.m);
    __atomic_thread_fence(__ATOMIC_ACQUIRE); /* the fields are this job's if a claim succeeds */
    inside_task = 1;
    for (int64_t j; (j = claim(seq, m)) >= 0;) {
        task(closure, j, m);
        if (ADD(&pool.done, 1) == m && LOAD(&pool.caller_waiting)) {
            pthread_mutex_lock(&pool.mu);
            pthread_cond_broadcast(&pool.finished);
            pthread_mutex_unlock(&pool.mu);
        }
    }
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
        uint64_t w;
        SPIN_UNTIL((w = __atomic_load_n(&pool.word, __ATOMIC_ACQUIRE)) != a.seen);
        if (w == a.seen) {
            pthread_mutex_lock(&pool.mu);
            ADD(&pool.sleepers, 1);
            while ((w = LOAD(&pool.word)) == a.seen) pthread_cond_wait(&pool.wake, &pool.mu);
            ADD(&pool.sleepers, -1);
            pthread_mutex_unlock(&pool.mu);
        }
        a.seen = w;
        if (a.id < (int)(w & 0xffff)) run_chunks((uint32_t)(w >> 16));
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
    size_t stack = (size_t)8 << 20;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > stack)
        stack = (size_t)rl.rlim_cur;
    pthread_attr_setstacksize(&attr, stack);
    while (pool.nworkers < want) {
        worker_arg *a = (worker_arg *)malloc(sizeof(worker_arg));
        if (a == NULL) break;
        a->id = pool.nworkers + 1;
        a->seen = LOAD(&pool.word); /* before this launch publishes its job: the worker sees it */
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
    int64_t m = k * (int64_t)LOAD(&pool.chunks_per_thread);
    if (m > n) m = n;
    if (k <= 1 || m > 0xffffffffLL) { /* no worker could be started, or too many chunks to count */
        __atomic_store_n(&pool.busy, 0, __ATOMIC_RELEASE);
        task(closure, 0, 1);
        return;
    }
    uint64_t seq = (LOAD(&pool.word) >> 16) + 1;
    STORE(&pool.next, (seq & 0xffffffffu) << 32); /* late workers of the last job claim nothing now */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    RELAXED_STORE(&pool.task, task);
    RELAXED_STORE(&pool.closure, closure);
    RELAXED_STORE(&pool.m, m);
    STORE(&pool.done, 0);
    STORE(&pool.word, seq << 16 | (uint64_t)k);
    if (LOAD(&pool.sleepers) > 0) {
        pthread_mutex_lock(&pool.mu);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.mu);
    }
    run_chunks((uint32_t)seq);
    SPIN_UNTIL(LOAD(&pool.done) == m);
    if (LOAD(&pool.done) != m) {
        pthread_mutex_lock(&pool.mu);
        STORE(&pool.caller_waiting, 1);
        while (LOAD(&pool.done) != m) pthread_cond_wait(&pool.finished, &pool.mu);
        STORE(&pool.caller_waiting, 0);
        pthread_mutex_unlock(&pool.mu);
    }
    ADD(&pool.n_parallel, 1);
    __atomic_store_n(&pool.busy, 0, __ATOMIC_RELEASE);
}

VDLA_EXPORT int vdla_pool_max_threads(void) { return MAX_THREADS; }

VDLA_EXPORT void vdla_pool_set_num_threads(int n) {
    STORE(&pool.threads, n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n);
}

VDLA_EXPORT void vdla_pool_set_chunks_per_thread(int c) { STORE(&pool.chunks_per_thread, c < 1 ? 1 : c); }

VDLA_EXPORT void vdla_pool_set_spin_us(int us) { STORE(&pool.spin_ns, (int64_t)(us < 0 ? 0 : us) * 1000); }

/* the settings: chunks per thread and spin time in microseconds */
VDLA_EXPORT void vdla_pool_settings(int64_t *out2) {
    out2[0] = LOAD(&pool.chunks_per_thread);
    out2[1] = LOAD(&pool.spin_ns) / 1000;
}

/* counters: workers started in this process, regions run in parallel, nested regions and
   regions that found the pool busy (both run serially) */
VDLA_EXPORT void vdla_pool_stats(int64_t *out4) {
    out4[0] = pool.nworkers;
    out4[1] = LOAD(&pool.n_parallel);
    out4[2] = LOAD(&pool.n_serial_nested);
    out4[3] = LOAD(&pool.n_serial_busy);
}

#define WS_SLOTS 64
#define WS_MAX_BYTES ((size_t)256 << 20)
#define WS_HEADER 64 /* the size, kept before the buffer; 64 keeps the buffer 64-byte aligned */

static struct {
    pthread_mutex_t mu;
    void *base[WS_SLOTS];
    size_t size[WS_SLOTS];
    int count;
    size_t bytes;
} ws;

VDLA_EXPORT void *vdla_workspace_alloc(size_t align, size_t n) {
    (void)align; /* always 64, the header's size */
    if (n > ((size_t)1 << 62))
        return NULL;
    pthread_mutex_lock(&ws.mu);
    for (int i = ws.count - 1; i >= 0; --i) {
        if (ws.size[i] == n) {
            char *base = (char *)ws.base[i];
            ws.count--;
            ws.base[i] = ws.base[ws.count];
            ws.size[i] = ws.size[ws.count];
            ws.bytes -= n;
            pthread_mutex_unlock(&ws.mu);
            return base + WS_HEADER;
        }
    }
    pthread_mutex_unlock(&ws.mu);
    char *base = (char *)aligned_alloc(WS_HEADER, n + WS_HEADER);
    if (base == NULL)
        return NULL;
    *(size_t *)base = n;
    return base + WS_HEADER;
}

VDLA_EXPORT void vdla_workspace_free(void *p) {
    if (p == NULL)
        return;
    char *base = (char *)p - WS_HEADER;
    size_t n = *(size_t *)base;
    pthread_mutex_lock(&ws.mu);
    if (ws.count < WS_SLOTS && ws.bytes + n <= WS_MAX_BYTES) {
        ws.base[ws.count] = base;
        ws.size[ws.count] = n;
        ws.count++;
        ws.bytes += n;
        pthread_mutex_unlock(&ws.mu);
        return;
    }
    pthread_mutex_unlock(&ws.mu);
    free(base);
}

VDLA_EXPORT int64_t vdla_workspace_cached_bytes(void) {
    pthread_mutex_lock(&ws.mu);
    int64_t b = (int64_t)ws.bytes;
    pthread_mutex_unlock(&ws.mu);
    return b;
}

/* The child of a fork has only the thread that forked: no workers, and the locks may have
   been copied while held. Start afresh (the settings stay). */
static void after_fork_in_child(void) {
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.finished, NULL);
    pool.nworkers = 0;
    pool.sleepers = 0;
    pool.caller_waiting = 0;
    pool.busy = 0;
    pool.n_parallel = pool.n_serial_nested = pool.n_serial_busy = 0;
    pthread_mutex_init(&ws.mu, NULL);
}

__attribute__((constructor)) static void pool_init(void) {
    pool.threads = 1;
    pool.chunks_per_thread = 4;
    pool.spin_ns = 100000;
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_cond_init(&pool.finished, NULL);
    pthread_mutex_init(&ws.mu, NULL);
    pthread_atfork(NULL, NULL, after_fork_in_child);
}
