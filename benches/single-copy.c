/* What one process_vm_readv costs against memcpy on this machine, by block length.
 *
 * A child process fills 150 MiB in blocks of RUN bytes with GAP bytes between them;
 * the parent reads them into a contiguous buffer with process_vm_readv (1024 iovecs
 * per call, as copr's single-copy reads batch them), then copies the same number of
 * bytes with memcpy; five repetitions, the first pays the page faults. HUGE=1 backs
 * the child's memory with transparent huge pages (madvise).
 *
 *   cc -O2 benches/single-copy.c -o /tmp/single-copy && /tmp/single-copy 512 512
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s RUN GAP\n", argv[0]);
        return 2;
    }
    size_t run = strtoul(argv[1], 0, 10), gap = strtoul(argv[2], 0, 10), total = 150u << 20;
    if (run == 0 || run > total) {
        fprintf(stderr, "RUN must be in 1..%zu\n", total);
        return 2;
    }
    size_t n = total / run, span = n * (run + gap);
    int huge = getenv("HUGE") && atoi(getenv("HUGE"));
    int p[2];
    if (pipe(p)) return 1;
    pid_t child = fork();
    if (child == 0) {
        char *b = aligned_alloc(2 << 20, (span + (2 << 20)) & ~(size_t)((2 << 20) - 1));
        if (huge) madvise(b, span, MADV_HUGEPAGE);
        memset(b, 1, span);
        if (write(p[1], &b, sizeof b) != sizeof b) return 1;
        pause();
        return 0;
    }
    char *b;
    if (read(p[0], &b, sizeof b) != sizeof b) return 1;
    char *a = malloc(total), *a2 = malloc(total);
    memset(a, 0, total);
    memset(a2, 0, total);
    struct iovec *r = malloc(1024 * sizeof *r), *l = malloc(1024 * sizeof *l);
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now();
        size_t got = 0;
        for (size_t i = 0; i < n; i += 1024) {
            size_t m = n - i < 1024 ? n - i : 1024;
            for (size_t j = 0; j < m; j++) {
                r[j].iov_base = b + (i + j) * (run + gap);
                r[j].iov_len = run;
                l[j].iov_base = a + (i + j) * run;
                l[j].iov_len = run;
            }
            ssize_t k = process_vm_readv(child, l, m, r, m, 0);
            if (k < 0) {
                perror("process_vm_readv");
                kill(child, SIGKILL);
                return 1;
            }
            got += (size_t)k;
        }
        double t1 = now();
        memcpy(a2, a, total);
        double t2 = now();
        printf("blocks of %zu bytes: process_vm_readv %.1f ms (%zu bytes), memcpy %.1f ms\n", run,
               1e3 * (t1 - t0), got, 1e3 * (t2 - t1));
    }
    kill(child, SIGKILL);
    return 0;
}
