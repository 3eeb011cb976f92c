/* Stress driver of vdla/compiler/targets/llvm/threadpool.c (built and run by test_threadpool.py).
 *
 * Three launcher threads at once each launch ITERS regions of 0..199 iterations, every 7th with
 * a region launched from inside each iteration; every iteration must run exactly once. Four
 * settings (threads, chunks per thread, spin time), then the same in a forked child.
 * Exit status 0 and "ok" on success.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

void vdla_parallel_launch(void (*task)(void *, int64_t, int64_t), void *closure, int64_t n);
void vdla_pool_set_num_threads(int n);
void vdla_pool_set_chunks_per_thread(int c);
void vdla_pool_set_spin_us(int us);

#define ITERS 4000

typedef struct {
    int64_t n;
    int *hits;
    int nested;
} job;

static void fail(const char *what, long a, long b) {
    printf("FAIL %s %ld %ld\n", what, a, b);
    fflush(stdout);
    _exit(1);
}

/* the j-th of m chunks, as the code generator's tasks split a loop */
static void bounds(int64_t n, int64_t j, int64_t m, int64_t *lo, int64_t *hi) {
    int64_t ch = (n + m - 1) / m;
    *lo = j * ch;
    *hi = (j + 1) * ch < n ? (j + 1) * ch : n;
}

static void inner(void *c, int64_t j, int64_t m) {
    job *jb = (job *)c;
    int64_t lo, hi;
    bounds(jb->n, j, m, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) __atomic_add_fetch(&jb->hits[i], 1, __ATOMIC_RELAXED);
}

static void outer(void *c, int64_t j, int64_t m) {
    job *jb = (job *)c;
    int64_t lo, hi;
    bounds(jb->n, j, m, &lo, &hi);
    for (int64_t i = lo; i < hi; i++) {
        if (jb->nested) {
            int h[3] = {0, 0, 0};
            job in = {3, h, 0};
            vdla_parallel_launch(inner, &in, 3);
            if (h[0] != 1 || h[1] != 1 || h[2] != 1) fail("nested region", (long)i, h[0] + h[1] + h[2]);
        }
        __atomic_add_fetch(&jb->hits[i], 1, __ATOMIC_RELAXED);
    }
}

static void *launcher(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg;
    int hits[200];
    for (int it = 0; it < ITERS; it++) {
        int64_t n = rand_r(&seed) % 200;
        for (int64_t i = 0; i < n; i++) hits[i] = 0;
        job jb = {n, hits, it % 7 == 0};
        vdla_parallel_launch(outer, &jb, n);
        for (int64_t i = 0; i < n; i++)
            if (hits[i] != 1) fail("iteration run other than once", (long)i, hits[i]);
    }
    return NULL;
}

int main(void) {
    static const int settings[4][3] = {{2, 4, 50}, {3, 4, 50}, {8, 4, 0}, {4, 1, 50}};
    for (int s = 0; s < 4; s++) {
        vdla_pool_set_num_threads(settings[s][0]);
        vdla_pool_set_chunks_per_thread(settings[s][1]);
        vdla_pool_set_spin_us(settings[s][2]);
        pthread_t t[3];
        for (int k = 0; k < 3; k++) pthread_create(&t[k], NULL, launcher, (void *)(uintptr_t)(k + 10 * s));
        for (int k = 0; k < 3; k++) pthread_join(t[k], NULL);
        pid_t pid = fork(); /* the parent's workers are running: the child must start its own */
        if (pid == 0) {
            launcher((void *)(uintptr_t)(99 + s));
            _exit(0);
        }
        int status;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail("forked child", s, status);
    }
    printf("ok\n");
    return 0;
}
