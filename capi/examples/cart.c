/* A process grid reordered for the machine: copr_cart_create is MPI_Cart_create with
 * reorder = 1 done for real. Each process then swaps its rank with its four grid
 * neighbours (MPI_Cart_shift) and checks what arrives; rank 0 prints the new order.
 *
 *   capi/install.sh PREFIX
 *   mpicc capi/examples/cart.c $(pkg-config --cflags --libs copr-capi) \
 *       -Wl,-rpath,PREFIX/lib -o cart      (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig)
 *   mpirun -n 8 -x COPR_EMULATE_NODE_SIZE=4 ./cart
 *
 * The machine: a machine file in COPR_MACHINE, or COPR_EMULATE_NODE_SIZE consecutive
 * ranks per node on one host, or else the nodes the ranks run on. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "copr.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int size, world_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);

    /* the grid: `./cart ROWS COLS`, or MPI_Dims_create's; periodic in both dimensions */
    int dims[2] = {0, 0}, periods[2] = {1, 1};
    if (argc == 3) {
        dims[0] = atoi(argv[1]);
        dims[1] = atoi(argv[2]);
    }
    MPI_Dims_create(size, 2, dims); /* an error when ROWS x COLS is not the job's size */
    MPI_Comm cart;
    if (copr_cart_create(MPI_COMM_WORLD, 2, dims, periods, NULL, &cart) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1); /* the message is on standard error */
    int rank, coords[2];
    MPI_Comm_rank(cart, &rank);
    MPI_Cart_coords(cart, rank, 2, coords);

    /* a halo exchange of ranks: what comes from a neighbour is that neighbour's rank */
    int wrong = 0;
    for (int d = 0; d < 2; d++) {
        int from, to, got;
        MPI_Cart_shift(cart, d, 1, &from, &to);
        MPI_Sendrecv(&rank, 1, MPI_INT, to, 0, &got, 1, MPI_INT, from, 0, cart,
                     MPI_STATUS_IGNORE);
        wrong += got != from;
    }
    int wrong_all;
    MPI_Reduce(&wrong, &wrong_all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);

    /* new_rank[w]: the rank in cart of the process of MPI_COMM_WORLD rank w */
    int *new_rank = malloc(sizeof(int) * (size_t)size);
    if (!new_rank)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Gather(&rank, 1, MPI_INT, new_rank, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (world_rank == 0) {
        printf("%dx%d grid on %d processes, %d wrong neighbours; new rank of ranks 0..%d:", dims[0],
               dims[1], size, wrong_all, size);
        for (int w = 0; w < size; w++)
            printf(" %d", new_rank[w]);
        printf("\n");
    }
    free(new_rank);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return wrong_all != 0 && world_rank == 0;
}
