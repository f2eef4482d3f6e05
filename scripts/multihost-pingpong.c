/* MPI ping-pong between ranks 0 and 1 for scripts/multihost.sh alpha: the median
 * round trip of 1-byte messages (alpha = half of it) and the time of 4 MB messages
 * (beta). Built on demand with mpicc; not part of the library. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_rt(char *buf, int bytes, int iters, int rank) {
    double *t = malloc(sizeof(double) * (size_t)iters);
    for (int i = 0; i < iters; i++) {
        double t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
        t[i] = MPI_Wtime() - t0;
    }
    qsort(t, (size_t)iters, sizeof *t, cmp);
    double m = t[iters / 2];
    free(t);
    return m;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *buf = calloc(1, 4 << 20);
    if (size >= 2 && rank < 2) {
        median_rt(buf, 1, 200, rank); /* warm up */
        double small = median_rt(buf, 1, 5000, rank);
        double big = median_rt(buf, 4 << 20, 20, rank);
        if (rank == 0)
            printf("MPI 1-byte round trip: median %.1f us (alpha ~ %.1f us one way); 4 MB one way: %.2f ms = %.2f Gbit/s\n",
                   small * 1e6, small * 5e5, big * 500, 8.0 * (4 << 20) / (big / 2) / 1e9);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
