/* The traffic recorder's test: every kind of send the recorder counts, with a known,
 * irregular, rank-dependent traffic, on MPI_COMM_WORLD, on split, duplicated and inter-
 * communicators, with persistent requests and neighbourhood collectives. Each process
 * counts what it sends as it goes (destinations worked out from the split's colour and
 * key and from grid coordinates, not from MPI's rank translation), rank 0 gathers the
 * counts, and after MPI_Finalize compares them, element by element, with the file the
 * recorder wrote (COPR_RECORD).
 *
 *   mpirun -x LD_PRELOAD=libcopr_interpose.so -x COPR_RECORD=traffic.txt -n 4 record-test
 *   record-test --no-check     (only the traffic: for a bad COPR_RECORD or none)
 *   record-test --threads      (MPI_THREAD_MULTIPLE: three threads send at once, each
 *                               on its own communicator in reverse rank order, instead
 *                               of the traffic above; skipped if not provided)
 *   record-test --halo R C BYTES
 *       (only a halo exchange on a periodic R x C grid whose task t runs on world rank
 *        (5 t + 3) mod p, p = R C coprime with 5: every task sends BYTES bytes to each of
 *        its four neighbours, once; for the end-to-end test with copr map)
 *
 * Exit status 0 when the file matches, 1 otherwise. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KINDS 14
#define MAXCOUNT 64
#define REPS_MAX 3

static int p, me;
/* COPR_RECORD_ALLTOALL=1: the all-to-alls are in the graph, as their pairwise blocks */
static int alltoall_in_graph;
/* what this process sent: messages and bytes per world rank */
static uint64_t *sent_msgs, *sent_bytes;

static void count(int world_dest, uint64_t bytes) {
    if (world_dest < 0) return;
    sent_msgs[world_dest] += 1;
    sent_bytes[world_dest] += bytes;
}

/* kind k: rank r sends reps(r, k) messages of size(r, k) elements to (r + off(k)) % p */
static int off(int k) { return (1 + 3 * k) % p; }
static int reps(int r, int k) { return 1 + (r + k) % REPS_MAX; }
static int size(int r, int k) { return 1 + (5 * r + 7 * k) % (MAXCOUNT - 1); }

static int type_bytes(MPI_Datatype t) {
    int s;
    MPI_Type_size(t, &s);
    return s;
}

static void fail(const char *what) {
    fprintf(stderr, "record-test: %s\n", what);
    exit(1);
}

/* the point-to-point sends on MPI_COMM_WORLD, kind by kind */
static void world_sends(MPI_Datatype triple) {
    static double sbuf[REPS_MAX][3 * MAXCOUNT], rbuf[REPS_MAX][3 * MAXCOUNT];
    MPI_Datatype types[KINDS] = {MPI_INT,    MPI_DOUBLE, MPI_CHAR, MPI_INT,   triple,
                                 MPI_SHORT,  MPI_INT,    MPI_DOUBLE, MPI_INT, MPI_DOUBLE,
                                 MPI_INT,    triple,     MPI_CHAR, MPI_DOUBLE};
    for (int k = 0; k < KINDS; k++) {
        int dest = (me + off(k)) % p, src = ((me - off(k)) % p + p) % p;
        int n = reps(me, k), m = size(me, k), rn = reps(src, k), rm = size(src, k);
        MPI_Datatype t = types[k];
        uint64_t bytes = (uint64_t)m * type_bytes(t);
        MPI_Request rq[REPS_MAX], sq[REPS_MAX];
        if (k == 8) { /* MPI_Sendrecv: both sides run max(n, rn) steps; a missing side is
                       * MPI_PROC_NULL */
            int steps = n > rn ? n : rn;
            for (int i = 0; i < steps; i++) {
                int d = i < n ? dest : MPI_PROC_NULL, s = i < rn ? src : MPI_PROC_NULL;
                MPI_Sendrecv(sbuf[0], m, t, d, k, rbuf[0], rm, t, s, k, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                if (i < n) count(dest, bytes);
            }
            continue;
        }
        if (k == 9) { /* MPI_Sendrecv_replace with equal sizes both ways: the largest */
            int steps = n > rn ? n : rn;
            for (int i = 0; i < steps; i++) {
                int d = i < n ? dest : MPI_PROC_NULL, s = i < rn ? src : MPI_PROC_NULL;
                MPI_Sendrecv_replace(sbuf[0], MAXCOUNT, t, d, k, s, k, MPI_COMM_WORLD,
                                     MPI_STATUS_IGNORE);
                if (i < n) count(dest, (uint64_t)MAXCOUNT * type_bytes(t));
            }
            continue;
        }
        for (int i = 0; i < rn; i++)
            MPI_Irecv(rbuf[i], rm, t, src, k, MPI_COMM_WORLD, &rq[i]);
        if (k == 3 || k == 7 || k == 13) MPI_Barrier(MPI_COMM_WORLD); /* ready sends */
        if (k >= 10) { /* persistent: made once, started n times */
            MPI_Request pr;
            if (k == 10) MPI_Send_init(sbuf[0], m, t, dest, k, MPI_COMM_WORLD, &pr);
            if (k == 11) MPI_Ssend_init(sbuf[0], m, t, dest, k, MPI_COMM_WORLD, &pr);
            if (k == 12) MPI_Bsend_init(sbuf[0], m, t, dest, k, MPI_COMM_WORLD, &pr);
            if (k == 13) MPI_Rsend_init(sbuf[0], m, t, dest, k, MPI_COMM_WORLD, &pr);
            for (int i = 0; i < n; i++) {
                if (i % 2 == 0)
                    MPI_Start(&pr);
                else
                    MPI_Startall(1, &pr);
                MPI_Wait(&pr, MPI_STATUS_IGNORE);
                count(dest, bytes);
            }
            MPI_Request_free(&pr);
        } else {
            for (int i = 0; i < n; i++) {
                switch (k) {
                case 0: MPI_Send(sbuf[i], m, t, dest, k, MPI_COMM_WORLD); break;
                case 1: MPI_Ssend(sbuf[i], m, t, dest, k, MPI_COMM_WORLD); break;
                case 2: MPI_Bsend(sbuf[i], m, t, dest, k, MPI_COMM_WORLD); break;
                case 3: MPI_Rsend(sbuf[i], m, t, dest, k, MPI_COMM_WORLD); break;
                case 4: MPI_Isend(sbuf[i], m, t, dest, k, MPI_COMM_WORLD, &sq[i]); break;
                case 5: MPI_Issend(sbuf[i], m, t, dest, k, MPI_COMM_WORLD, &sq[i]); break;
                case 6: MPI_Ibsend(sbuf[i], m, t, dest, k, MPI_COMM_WORLD, &sq[i]); break;
                case 7: MPI_Irsend(sbuf[i], m, t, dest, k, MPI_COMM_WORLD, &sq[i]); break;
                }
                count(dest, bytes);
            }
            if (k >= 4) MPI_Waitall(n, sq, MPI_STATUSES_IGNORE);
        }
        MPI_Waitall(rn, rq, MPI_STATUSES_IGNORE);
    }
    /* nothing goes to MPI_PROC_NULL */
    MPI_Send(sbuf[0], 5, MPI_INT, MPI_PROC_NULL, 99, MPI_COMM_WORLD);
}

/* world rank of rank l of the split of colour c whose key is sign * world rank */
static int split_member(int c, int l, int sign) {
    int q = 0;
    for (int r = c; r < p; r += 2) q++;
    int idx = sign < 0 ? q - 1 - l : l; /* members in ascending world rank */
    return c + 2 * idx;
}

/* sends on communicators other than MPI_COMM_WORLD */
static void split_sends(void) {
    static int sbuf[4 * MAXCOUNT], rbuf[4 * MAXCOUNT];
    for (int round = 0; round < 2; round++) {
        /* round 0: colour = rank % 2, descending order; round 1: a duplicate of world is
         * made, used, freed first, then the split in ascending order (a handle MPI may
         * reuse: the recorder must not take it for the freed one) */
        int sign = round == 0 ? -1 : 1;
        if (round == 1) {
            MPI_Comm dup;
            MPI_Comm_dup(MPI_COMM_WORLD, &dup);
            int d = (me + 2) % p, s = ((me - 2) % p + p) % p;
            MPI_Request r;
            MPI_Irecv(rbuf, 3 + s % 4, MPI_INT, s, 5, dup, &r);
            MPI_Send(sbuf, 3 + me % 4, MPI_INT, d, 5, dup);
            count(d, (uint64_t)(3 + me % 4) * sizeof(int));
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            MPI_Comm_free(&dup);
        }
        MPI_Comm split;
        MPI_Comm_split(MPI_COMM_WORLD, me % 2, sign * me, &split);
        int q, l;
        MPI_Comm_size(split, &q);
        MPI_Comm_rank(split, &l);
        int c = me % 2;
        int dl = (l + 1 + round) % q, sl = ((l - 1 - round) % q + q) % q;
        int m = 2 + (me * 3 + round) % 11, n = 1 + (me + round) % 2;
        int sworld = split_member(c, sl, sign);
        int rm = 2 + (sworld * 3 + round) % 11, rn = 1 + (sworld + round) % 2;
        MPI_Request rq[2], sq[2];
        for (int i = 0; i < rn; i++) MPI_Irecv(rbuf + i * MAXCOUNT, rm, MPI_INT, sl, 7, split, &rq[i]);
        for (int i = 0; i < n; i++) {
            MPI_Isend(sbuf, m, MPI_INT, dl, 7, split, &sq[i]);
            count(split_member(c, dl, sign), (uint64_t)m * sizeof(int));
        }
        MPI_Waitall(n, sq, MPI_STATUSES_IGNORE);
        MPI_Waitall(rn, rq, MPI_STATUSES_IGNORE);
        /* a persistent send on the split, started three times */
        MPI_Request pr, rr;
        MPI_Send_init(sbuf, m + 1, MPI_INT, dl, 8, split, &pr);
        for (int i = 0; i < 3; i++) {
            MPI_Irecv(rbuf, rm + 1, MPI_INT, sl, 8, split, &rr);
            MPI_Start(&pr);
            MPI_Wait(&pr, MPI_STATUS_IGNORE);
            MPI_Wait(&rr, MPI_STATUS_IGNORE);
            count(split_member(c, dl, sign), (uint64_t)(m + 1) * sizeof(int));
        }
        MPI_Request_free(&pr);
        /* round 0: an inter-communicator between the two colours; rank l sends one
         * message to remote rank l % (remote size) */
        if (round == 0 && p >= 2) {
            MPI_Comm inter;
            int rq_size = (p - (1 - c) + 1) / 2; /* members of the other colour */
            MPI_Intercomm_create(split, 0, MPI_COMM_WORLD, split_member(1 - c, 0, sign), 9,
                                 &inter);
            int senders = 0;
            for (int ll = 0; ll < rq_size; ll++) senders += ll % q == l;
            MPI_Request ir[64];
            for (int i = 0; i < senders; i++)
                MPI_Irecv(rbuf + i * MAXCOUNT, MAXCOUNT, MPI_INT, MPI_ANY_SOURCE, 9, inter, &ir[i]);
            int to = l % rq_size, im = 1 + me % 5;
            MPI_Send(sbuf, im, MPI_INT, to, 9, inter);
            count(split_member(1 - c, to, sign), (uint64_t)im * sizeof(int));
            MPI_Waitall(senders, ir, MPI_STATUSES_IGNORE);
            MPI_Comm_free(&inter);
        }
        /* a collective, counted apart (not in the graph) */
        MPI_Alltoall(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, split);
        for (int i = 0; i < q && alltoall_in_graph; i++)
            count(split_member(c, i, sign), sizeof(int));
        MPI_Comm_free(&split);
    }
}

/* neighbourhood collectives on a Cartesian grid (periodic in dimension 0 only) and on a
 * distributed graph */
static void neighbourhood(void) {
    static int sbuf[8 * MAXCOUNT], rbuf[8 * MAXCOUNT];
    int dims[2] = {0, 0}, periods[2] = {1, 0};
    MPI_Dims_create(p, 2, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    /* row-major coordinates (reorder = 0: the grid rank is the world rank) */
    int c0 = me / dims[1], c1 = me % dims[1];
    int nb[4];
    nb[0] = ((c0 - 1 + dims[0]) % dims[0]) * dims[1] + c1;
    nb[1] = ((c0 + 1) % dims[0]) * dims[1] + c1;
    nb[2] = c1 > 0 ? me - 1 : -1;
    nb[3] = c1 + 1 < dims[1] ? me + 1 : -1;
    int m = 2 + p % 3; /* the same on every process, as the call requires */
    MPI_Neighbor_alltoall(sbuf, m, MPI_INT, rbuf, m, MPI_INT, cart);
    for (int i = 0; i < 4; i++) count(nb[i], (uint64_t)m * sizeof(int));
    MPI_Request r;
    int g = 1 + p % 2;
    MPI_Ineighbor_allgather(sbuf, g, MPI_DOUBLE, rbuf, g, MPI_DOUBLE, cart, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    for (int i = 0; i < 4; i++) count(nb[i], (uint64_t)g * sizeof(double));
    MPI_Comm_free(&cart);

    /* out-neighbours r + 1 and r + 3 (once if equal) */
    int out[2], outdeg = 0, in[2 * 64], indeg = 0;
    out[outdeg++] = (me + 1) % p;
    if ((me + 3) % p != out[0]) out[outdeg++] = (me + 3) % p;
    for (int s = 0; s < p; s++) {
        int a = (s + 1) % p, b = (s + 3) % p;
        if (a == me || (b == me && b != a)) in[indeg++] = s;
    }
    if (indeg > 64) fail("too many ranks for this test");
    MPI_Comm graph;
    int in_weights[2 * 64], out_weights[2] = {1, 1};
    for (int i = 0; i < indeg; i++) in_weights[i] = 1;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, indeg, in, in_weights, outdeg, out,
                                   out_weights, MPI_INFO_NULL, 0, &graph);
    int scounts[2], sdispls[2], rcounts[128], rdispls[128];
    for (int i = 0; i < outdeg; i++) {
        scounts[i] = 1 + me + 2 * i;
        sdispls[i] = i * MAXCOUNT;
    }
    for (int i = 0; i < indeg; i++) {
        rcounts[i] = MAXCOUNT;
        rdispls[i] = 0;
    }
    /* the receive counts must match: every sender's count for this process */
    for (int i = 0; i < indeg; i++) {
        int s = in[i], a = (s + 1) % p;
        int j = a == me ? 0 : 1;
        rcounts[i] = 1 + s + 2 * j;
        rdispls[i] = i * MAXCOUNT;
    }
    static int gbuf[128 * MAXCOUNT];
    MPI_Neighbor_alltoallv(sbuf, scounts, sdispls, MPI_INT, gbuf, rcounts, rdispls, MPI_INT,
                           graph);
    for (int i = 0; i < outdeg; i++) count(out[i], (uint64_t)scounts[i] * sizeof(int));
    MPI_Comm_free(&graph);
}

/* --threads: thread t sends 200 + 50 t messages of 1 + t + me % 3 ints to world rank
 * (me + t + 1) % p, on its own communicator whose rank l is world rank p - 1 - l */
#define THREADS 3
struct job {
    int t;
    MPI_Comm comm;
};

static void *thread_sends(void *arg) {
    struct job *j = arg;
    int t = j->t, dest = (me + t + 1) % p, src = ((me - t - 1) % p + p) % p;
    int n = 200 + 50 * t, m = 1 + t + me % 3, rm = 1 + t + src % 3;
    int sbuf[8] = {0}, rbuf[8];
    for (int i = 0; i < n; i++) {
        MPI_Request r;
        MPI_Irecv(rbuf, rm, MPI_INT, p - 1 - src, t, j->comm, &r);
        MPI_Send(sbuf, m, MPI_INT, p - 1 - dest, t, j->comm);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    return NULL;
}

static void threads(void) {
    struct job jobs[THREADS];
    pthread_t ids[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t].t = t;
        MPI_Comm_split(MPI_COMM_WORLD, 0, -me, &jobs[t].comm);
    }
    for (int t = 0; t < THREADS; t++)
        if (pthread_create(&ids[t], NULL, thread_sends, &jobs[t]) != 0) fail("pthread_create");
    for (int t = 0; t < THREADS; t++) {
        pthread_join(ids[t], NULL);
        int dest = (me + t + 1) % p, n = 200 + 50 * t, m = 1 + t + me % 3;
        sent_msgs[dest] += n;
        sent_bytes[dest] += (uint64_t)n * m * sizeof(int);
        MPI_Comm_free(&jobs[t].comm);
    }
}

/* the scrambled halo exchange of --halo */
static int halo(int rows, int cols, int bytes) {
    if (rows * cols != p || p % 5 == 0 || bytes < 1) {
        if (me == 0) fprintf(stderr, "record-test: --halo R C BYTES: R C = ranks, not a multiple of 5\n");
        return 2;
    }
    int task = -1;
    for (int t = 0; t < p; t++)
        if ((5 * t + 3) % p == me) task = t;
    int r = task / cols, c = task % cols;
    int nbr[4] = {((r + rows - 1) % rows) * cols + c, ((r + 1) % rows) * cols + c,
                  r * cols + (c + cols - 1) % cols, r * cols + (c + 1) % cols};
    char *sbuf = calloc(bytes, 1), *rbuf = calloc(bytes, 1);
    for (int d = 0; d < 4; d++) {
        int to = (5 * nbr[d] + 3) % p, from = (5 * nbr[d ^ 1] + 3) % p;
        MPI_Sendrecv(sbuf, bytes, MPI_BYTE, to, d, rbuf, bytes, MPI_BYTE, from, d,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    free(sbuf);
    free(rbuf);
    return 0;
}

int main(int argc, char **argv) {
    int check = !(argc > 1 && strcmp(argv[1], "--no-check") == 0);
    int threaded = argc > 1 && strcmp(argv[1], "--threads") == 0, provided = 0;
    if (threaded) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided < MPI_THREAD_MULTIPLE) {
            printf("record-test: MPI_THREAD_MULTIPLE not provided: --threads skipped\n");
            MPI_Finalize();
            return 0;
        }
    } else {
        MPI_Init(&argc, &argv);
    }
    if (argc == 5 && strcmp(argv[1], "--halo") == 0) {
        MPI_Comm_size(MPI_COMM_WORLD, &p);
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
        int rc = halo(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
        MPI_Finalize();
        return rc;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (p > 64) fail("at most 64 ranks");
    const char *a2a = getenv("COPR_RECORD_ALLTOALL");
    alltoall_in_graph = a2a && strcmp(a2a, "1") == 0;
    sent_msgs = calloc(p, sizeof(uint64_t));
    sent_bytes = calloc(p, sizeof(uint64_t));
    static char bsend_buffer[1 << 20];
    MPI_Buffer_attach(bsend_buffer, sizeof bsend_buffer);
    MPI_Datatype triple;
    MPI_Type_contiguous(3, MPI_SHORT, &triple);
    MPI_Type_commit(&triple);

    if (threaded) {
        threads();
    } else {
        world_sends(triple);
        split_sends();
        neighbourhood();
    }
    double x[4] = {me, 1, 2, 3}, y[4];
    MPI_Allreduce(x, y, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(x, y, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    /* an all-to-all-v of irregular blocks, some empty: rank i gets (me + 2 i) % 4 ints */
    int *sc = malloc(4 * p * sizeof(int)), *sd = sc + p, *rc = sc + 2 * p, *rd = sc + 3 * p;
    int *a2a_s = calloc(4 * p, sizeof(int)), *a2a_r = calloc(4 * p, sizeof(int));
    for (int i = 0; i < p; i++) {
        sc[i] = (me + 2 * i) % 4;
        rc[i] = (i + 2 * me) % 4;
        sd[i] = rd[i] = 4 * i;
    }
    MPI_Alltoallv(a2a_s, sc, sd, MPI_INT, a2a_r, rc, rd, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < p && alltoall_in_graph; i++)
        if (sc[i] > 0) count(i, (uint64_t)sc[i] * sizeof(int));
    /* an all-to-all in place (MPI_IN_PLACE differs between MPI libraries): its blocks
     * are those of the receive arguments, 2 ints to every rank */
    int *in_place = calloc(2 * (size_t)p, sizeof(int));
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, in_place, 2, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < p && alltoall_in_graph; i++) count(i, 2 * sizeof(int));

    /* rank 0 gathers every process's counts (PMPI: not a collective of the program) */
    uint64_t *all = NULL;
    uint64_t *mine = malloc(2 * p * sizeof(uint64_t));
    for (int d = 0; d < p; d++) {
        mine[2 * d] = sent_msgs[d];
        mine[2 * d + 1] = sent_bytes[d];
    }
    if (me == 0) all = malloc(2 * (size_t)p * p * sizeof(uint64_t));
    PMPI_Gather(mine, 2 * p, MPI_UINT64_T, all, 2 * p, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    void *detached;
    int detached_size;
    MPI_Buffer_detach(&detached, &detached_size);
    MPI_Type_free(&triple);
    int world_size = p, rank = me;
    (void)provided;
    MPI_Finalize();
    if (!check || rank != 0) return 0;

    const char *path = getenv("COPR_RECORD");
    if (!path) fail("COPR_RECORD is not set");
    FILE *f = fopen(path, "r");
    if (!f) fail("the recording was not written");
    uint64_t *got = calloc(2 * (size_t)world_size * world_size, sizeof(uint64_t));
    char line[4096];
    int tasks = -1, hosts = 0, lines = 0, allreduce = 0, alltoall = 0, failures = 0;
    char want_allreduce[256], want_in_place[256];
    snprintf(want_allreduce, sizeof want_allreduce,
             "# collective MPI_Allreduce on a communicator of all %d ranks: 2 calls, %d bytes "
             "in the send arguments\n",
             world_size, 2 * 32 * world_size);
    /* (on one rank, the splits' all-to-alls are on a communicator of all 1 ranks too) */
    int in_place_lines = 0, want_in_place_lines = world_size > 1;
    snprintf(want_in_place, sizeof want_in_place,
             "# collective MPI_Alltoall on a communicator of all %d ranks: 1 calls, %d bytes "
             "in the send arguments\n",
             world_size, 8 * world_size * world_size);
    while (fgets(line, sizeof line, f)) {
        int a, b;
        unsigned long long bytes, msgs;
        char host[512];
        if (strcmp(line, want_allreduce) == 0) allreduce++;
        if (strcmp(line, want_in_place) == 0) in_place_lines++;
        if (strncmp(line, "# collective MPI_Alltoall on", 28) == 0) alltoall++;
        if (sscanf(line, "# host %d %511s", &a, host) == 2 && a == hosts) hosts++;
        if (line[0] == '#') continue;
        if (sscanf(line, "tasks %d", &tasks) == 1) continue;
        if (sscanf(line, "%d %d %llu # %llu messages", &a, &b, &bytes, &msgs) != 4 || a < 0 ||
            b < 0 || a >= world_size || b >= world_size) {
            fprintf(stderr, "record-test: bad line: %s", line);
            failures++;
            continue;
        }
        if (got[2 * ((size_t)a * world_size + b)] != 0) {
            fprintf(stderr, "record-test: %d -> %d listed twice\n", a, b);
            failures++;
        }
        got[2 * ((size_t)a * world_size + b)] = msgs;
        got[2 * ((size_t)a * world_size + b) + 1] = bytes;
        lines++;
    }
    fclose(f);
    if (tasks != world_size) {
        fprintf(stderr, "record-test: tasks %d, expected %d\n", tasks, world_size);
        failures++;
    }
    if (hosts != world_size) {
        fprintf(stderr, "record-test: %d host lines in order, expected %d\n", hosts, world_size);
        failures++;
    }
    if (allreduce != 1) {
        fprintf(stderr, "record-test: expected the line: %s", want_allreduce);
        failures++;
    }
    if (in_place_lines != want_in_place_lines) {
        fprintf(stderr, "record-test: expected %d times the line: %s", want_in_place_lines,
                want_in_place);
        failures++;
    }
    /* the two splits (and, on one rank, a single split of one colour), and the world's
     * in place */
    if (!threaded && (alltoall < 1 || alltoall > 5)) {
        fprintf(stderr, "record-test: %d MPI_Alltoall lines\n", alltoall);
        failures++;
    }
    int edges = 0;
    for (int s = 0; s < world_size; s++)
        for (int d = 0; d < world_size; d++) {
            size_t i = 2 * ((size_t)s * world_size + d);
            if (all[i] != 0) edges++;
            if (got[i] != all[i] || got[i + 1] != all[i + 1]) {
                fprintf(stderr,
                        "record-test: %d -> %d: recorded %llu messages, %llu bytes; "
                        "sent %llu messages, %llu bytes\n",
                        s, d, (unsigned long long)got[i], (unsigned long long)got[i + 1],
                        (unsigned long long)all[i], (unsigned long long)all[i + 1]);
                failures++;
            }
        }
    if (lines != edges) {
        fprintf(stderr, "record-test: %d edge lines, %d pairs sent to\n", lines, edges);
        failures++;
    }
    if (failures) {
        fprintf(stderr, "record-test: %d failures on %d ranks\n", failures, world_size);
        return 1;
    }
    printf("record-test: %d ranks, %d edges: the recording equals the program's own counts\n",
           world_size, edges);
    return 0;
}
