/* Replays a communication graph: every round, each rank posts an MPI_Irecv
 * for every edge into it and an MPI_Isend for every edge out of it, then
 * MPI_Waitall.
 *
 *   replay FILE ITERATIONS
 *
 * FILE is an edge list, one edge per line: `SRC DST BYTES` (ranks in
 * 0..size-1, BYTES in 0..INT_MAX, whitespace-separated); `#` starts a comment
 * (whole line or trailing), blank lines are ignored. Several edges between the
 * same pair are several messages; self-edges are messages to oneself.
 *
 * The ITERATIONS rounds are timed with MPI_Wtime (simulated time under SimGrid
 * SMPI) from a common start. Where the clock is global (MPI_WTIME_IS_GLOBAL,
 * as under SMPI), every rank sleeps after a barrier until the same instant,
 * 1 ms after the last rank left the barrier, and starts there: ranks leave a
 * barrier microseconds apart, by an amount that depends on where they sit, and
 * a round of small messages is that short too. After its last round each rank
 * sleeps again until 100 s after the start, so that the reduction of the times
 * sends nothing while another rank's messages are still on the way (a round
 * that ends later than that is an error). Elsewhere each rank starts when it
 * leaves the barrier and the times are reduced at once. Rank 0 prints the
 * maximum over ranks of the time from the start to the end of the last round as
 *
 *   replay_time_s <seconds>
 *
 * Rank 0 reads the file and scatters each rank's edges. Bad arguments or a bad
 * file: a message on stderr (with the line number) and exit status 2.
 */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"

static void fail(int rank, const char *msg, const char *arg)
{
    fail_usage("replay", "replay FILE ITERATIONS  (FILE lines: SRC DST BYTES)", rank, msg, arg);
}

typedef struct {
    int src, dst, bytes;
} edge_t;

/* Slack between the last barrier exit and the common start, simulated seconds:
 * room for the MPI_Allreduce that tells every rank that exit. */
#define START_SLACK_S 1e-3
/* The common end: this long after the start (simulated seconds), the times are
 * reduced. */
#define END_HORIZON_S 100.0

/* 1 when MPI_Wtime is the same clock on every rank (SMPI), else 0. */
static int clock_is_global(void)
{
    int *global = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &global, &flag);
    return flag && global && *global;
}

/* Sleeps until the instant `until` of MPI_Wtime's clock; 0 if it has passed. */
static int sleep_until(double until)
{
    double wait = until - MPI_Wtime();
    if (wait < 0.0)
        return 0;
    struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
    nanosleep(&ts, NULL);
    return 1;
}

/* The start of the timed rounds on this rank (see the header). */
static double common_start(int rank, int global)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double left = MPI_Wtime();
    if (!global)
        return left;
    double last = left;
    MPI_Allreduce(&left, &last, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double start = last + START_SLACK_S;
    if (!sleep_until(start)) {
        fprintf(stderr, "replay: rank %d reached the common start late\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return start;
}

/* Prints `replay_time_s` on rank 0: the largest time from t0 to the end of a
 * rank's last round, reduced after the common end where the clock is global. */
static void report(double t0, int rank, int global)
{
    double v[2] = {MPI_Wtime() - t0, 0.0}, w[2] = {0.0, 0.0};
    if (global && !sleep_until(t0 + END_HORIZON_S))
        v[1] = 1.0;
    MPI_Reduce(v, w, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (w[1] > 0.0) {
            fprintf(stderr, "replay: a round ended more than %g s after the start\n",
                    END_HORIZON_S);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        printf("replay_time_s %.9e\n", w[0]);
        fflush(stdout);
    }
}

/* Reads the edge list on rank 0. Returns the number of edges (>= 0) and sets
 * *out, or -1 after printing an error. */
static long read_edges(const char *path, int size, edge_t **out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    long n = 0, cap = 1024, lineno = 0;
    edge_t *e = malloc(sizeof(edge_t) * (size_t)cap);
    char line[4096];
    while (e && fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n' && !feof(f)) {
            fprintf(stderr, "replay: %s:%ld: line too long\n", path, lineno);
            free(e);
            fclose(f);
            return -1;
        }
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *fld[4];
        int nf = 0;
        for (char *tok = strtok(line, " \t\r\n,"); tok; tok = strtok(NULL, " \t\r\n,")) {
            if (nf < 4)
                fld[nf] = tok;
            nf++;
        }
        if (nf == 0)
            continue;
        long s, d, b;
        if (nf != 3) {
            fprintf(stderr, "replay: %s:%ld: expected `SRC DST BYTES`, found %d fields\n", path,
                    lineno, nf);
            free(e);
            fclose(f);
            return -1;
        }
        if (!parse_long(fld[0], 0, size - 1, &s) || !parse_long(fld[1], 0, size - 1, &d)) {
            fprintf(stderr,
                    "replay: %s:%ld: SRC and DST must be ranks in 0..%d, found `%s %s`\n",
                    path, lineno, size - 1, fld[0], fld[1]);
            free(e);
            fclose(f);
            return -1;
        }
        if (!parse_long(fld[2], 0, INT_MAX, &b)) {
            fprintf(stderr, "replay: %s:%ld: BYTES must be an integer in 0..%d, found `%s`\n",
                    path, lineno, INT_MAX, fld[2]);
            free(e);
            fclose(f);
            return -1;
        }
        if (n == cap) {
            cap *= 2;
            edge_t *g = realloc(e, sizeof(edge_t) * (size_t)cap);
            if (!g) {
                free(e);
                e = NULL;
                break;
            }
            e = g;
        }
        e[n].src = (int)s;
        e[n].dst = (int)d;
        e[n].bytes = (int)b;
        n++;
    }
    int err = ferror(f);
    fclose(f);
    if (!e || err) {
        fprintf(stderr, "replay: %s: %s\n", path, e ? "read error" : "out of memory");
        free(e);
        return -1;
    }
    *out = e;
    return n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    if (argc != 3)
        fail(rank, "expected 2 arguments", NULL);
    long iters;
    if (!parse_long(argv[2], 0, 100000000, &iters))
        fail(rank, "ITERATIONS must be an integer in 0..1e8", argv[2]);

    /* Rank 0 reads; every rank gets its records (peer, bytes, 0 = in / 1 = out)
     * in file order, which keeps duplicate edges matched in order. */
    int ok = 1;
    int *counts = NULL, *displs = NULL, *recs = NULL;
    if (rank == 0) {
        edge_t *e = NULL;
        long n = read_edges(argv[1], size, &e);
        ok = n >= 0;
        if (ok && 2 * n > INT_MAX / 3) {
            fprintf(stderr, "replay: %s: too many edges (%ld)\n", argv[1], n);
            ok = 0;
        }
        if (ok) {
            counts = calloc((size_t)size, sizeof(int));
            displs = calloc((size_t)size, sizeof(int));
            recs = malloc(sizeof(int) * (size_t)(6 * n + 1));
            int *fill = calloc((size_t)size, sizeof(int));
            if (!counts || !displs || !recs || !fill) {
                fprintf(stderr, "replay: out of memory\n");
                ok = 0;
            } else {
                for (long k = 0; k < n; k++) {
                    counts[e[k].dst] += 3;
                    counts[e[k].src] += 3;
                }
                for (int r = 1; r < size; r++)
                    displs[r] = displs[r - 1] + counts[r - 1];
                for (long k = 0; k < n; k++) {
                    int *a = recs + displs[e[k].dst] + fill[e[k].dst];
                    a[0] = e[k].src, a[1] = e[k].bytes, a[2] = 0;
                    fill[e[k].dst] += 3;
                    int *b = recs + displs[e[k].src] + fill[e[k].src];
                    b[0] = e[k].dst, b[1] = e[k].bytes, b[2] = 1;
                    fill[e[k].src] += 3;
                }
            }
            free(fill);
        }
        free(e);
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok) {
        MPI_Finalize();
        exit(2);
    }
    int mine = 0;
    MPI_Scatter(counts, 1, MPI_INT, &mine, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int *my = malloc(sizeof(int) * (size_t)(mine + 1));
    if (!my)
        fail(rank, "out of memory", NULL);
    MPI_Scatterv(recs, counts, displs, MPI_INT, my, mine, MPI_INT, 0, MPI_COMM_WORLD);
    free(counts);
    free(displs);
    free(recs);

    int nrec = mine / 3;
    long long need = 0, smax = 1;
    for (int k = 0; k < nrec; k++) {
        if (my[3 * k + 2] == 0)
            need += my[3 * k + 1];
        else if (my[3 * k + 1] > smax)
            smax = my[3 * k + 1];
    }
    /* The same buffer size on every rank (shared under SMPI). */
    long long total = need + smax, gtotal = 0;
    MPI_Allreduce(&total, &gtotal, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
#ifdef SMPI_SHARED_MALLOC
    char *mem = SMPI_SHARED_MALLOC((size_t)gtotal);
#else
    char *mem = malloc((size_t)gtotal);
#endif
    MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t)(nrec + 1));
    if (!mem || !req)
        fail(rank, "out of memory", NULL);
    char *sbuf = mem + need;
    memset(sbuf, 1, (size_t)smax);

    int global = clock_is_global();
    double t0 = common_start(rank, global);
    for (long it = 0; it < iters; it++) {
        long long off = 0;
        int n = 0;
        for (int k = 0; k < nrec; k++)
            if (my[3 * k + 2] == 0) {
                MPI_Irecv(mem + off, my[3 * k + 1], MPI_BYTE, my[3 * k], 0, MPI_COMM_WORLD,
                          &req[n++]);
                off += my[3 * k + 1];
            }
        for (int k = 0; k < nrec; k++)
            if (my[3 * k + 2] == 1)
                MPI_Isend(sbuf, my[3 * k + 1], MPI_BYTE, my[3 * k], 0, MPI_COMM_WORLD, &req[n++]);
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    }
    report(t0, rank, global);

#ifdef SMPI_SHARED_MALLOC
    SMPI_SHARED_FREE(mem);
#else
    free(mem);
#endif
    free(req);
    free(my);
    MPI_Finalize();
    return 0;
}
