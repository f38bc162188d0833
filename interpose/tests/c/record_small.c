/* Small programs for the traffic recorder, one per mode (argv[1]), each with a traffic
 * known in advance (scripts/mpi-tests.sh writes the expected lines with awk):
 *
 *   silent    never communicates
 *   coll      only collectives (MPI_Bcast, MPI_Allreduce, MPI_Alltoall, MPI_Barrier):
 *             nothing in the graph
 *   sendrecv  a ring by MPI_Sendrecv: r sends 100 bytes to (r + 1) mod p
 *   persist   persistent requests started three times: r sends 8 (r + 1) bytes to
 *             r + 1 (the last rank to MPI_PROC_NULL): 24 (r + 1) bytes in all
 *   split     MPI_Comm_split by parity; in each half rank k sends 10 bytes to k + 1,
 *             which is world rank r + 2
 *   self      16 bytes to itself (Isend/Irecv), then 5 bytes to (r + 1) mod p
 *   abort     0 sends 4 bytes to 1, then rank 0 calls MPI_Abort: no MPI_Finalize */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int p, r;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    const char *m = argc > 1 ? argv[1] : "silent";
    static char buf[256], rb[256];
    memset(buf, 1, sizeof buf);
    if (!strcmp(m, "coll")) {
        MPI_Bcast(buf, 100, MPI_CHAR, 0, MPI_COMM_WORLD);
        double x = r, y;
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        int *a = calloc((size_t)p, sizeof(int)), *b = calloc((size_t)p, sizeof(int));
        MPI_Alltoall(a, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD);
        free(a);
        free(b);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (!strcmp(m, "sendrecv")) {
        MPI_Sendrecv(buf, 100, MPI_CHAR, (r + 1) % p, 0, rb, 100, MPI_CHAR, (r + p - 1) % p, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(m, "persist")) {
        MPI_Request s, q;
        int to = r + 1 < p ? r + 1 : MPI_PROC_NULL, from = r > 0 ? r - 1 : MPI_PROC_NULL;
        MPI_Send_init(buf, 8 * (r + 1), MPI_CHAR, to, 0, MPI_COMM_WORLD, &s);
        MPI_Recv_init(rb, (int)sizeof rb, MPI_CHAR, from, 0, MPI_COMM_WORLD, &q);
        for (int i = 0; i < 3; i++) {
            MPI_Start(&q);
            MPI_Start(&s);
            MPI_Wait(&s, MPI_STATUS_IGNORE);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&s);
        MPI_Request_free(&q);
    } else if (!strcmp(m, "split")) {
        MPI_Comm c;
        MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &c);
        int k, n;
        MPI_Comm_rank(c, &k);
        MPI_Comm_size(c, &n);
        if (k + 1 < n) MPI_Send(buf, 10, MPI_CHAR, k + 1, 0, c);
        if (k > 0) MPI_Recv(rb, 10, MPI_CHAR, k - 1, 0, c, MPI_STATUS_IGNORE);
        MPI_Comm_free(&c);
    } else if (!strcmp(m, "self")) {
        MPI_Request q;
        MPI_Irecv(rb, 16, MPI_CHAR, r, 1, MPI_COMM_WORLD, &q);
        MPI_Send(buf, 16, MPI_CHAR, r, 1, MPI_COMM_WORLD);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        MPI_Sendrecv(buf, 5, MPI_CHAR, (r + 1) % p, 0, rb, 5, MPI_CHAR, (r + p - 1) % p, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(m, "abort")) {
        if (r == 0 && p > 1) MPI_Send(buf, 4, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
        if (r == 1) MPI_Recv(rb, 4, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        if (r == 0) MPI_Abort(MPI_COMM_WORLD, 3);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
