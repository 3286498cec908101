/* rna's computation with nothing of mheta in it: a probe of the machine (study/noise.md).
 *
 * One rank's part of the rna fixture's table, ROWS x 1000 int32 scores on huge pages, swept
 * ITERATIONS times in tiles of 64 columns: each cell is the largest of 0, the diagonal plus its
 * score, the cell above less the gap and the cell to the left less the gap, and the row segment
 * is swapped per row, as in fixtures/rna/src/main.rs. Prints the mean milliseconds per sweep,
 * the first three sweeps left out.
 *
 * Usage: dp ROWS ITERATIONS */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

enum { COLS = 1000, TILE = 64, WARM_UP = 3 };

static inline int32_t max32(int32_t a, int32_t b) { return a > b ? a : b; }

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: dp ROWS ITERATIONS\n");
        return 2;
    }
    size_t rows = strtoul(argv[1], NULL, 10);
    int iterations = atoi(argv[2]);
    if (rows == 0 || iterations <= WARM_UP) {
        fprintf(stderr, "dp: ROWS must be positive and ITERATIONS above %d\n", WARM_UP);
        return 2;
    }
    size_t bytes = rows * COLS * sizeof(int32_t), huge = 2 << 20;
    char *raw = mmap(NULL, bytes + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        perror("dp: mmap");
        return 1;
    }
    int32_t *score = (int32_t *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
    madvise(score, bytes, MADV_HUGEPAGE);
    for (size_t i = 0; i < rows * COLS; i++)
        score[i] = ((i * 2654435761u) >> 13) % 7 == 0 ? 3 : -1;
    int32_t *left = calloc(rows, sizeof(int32_t));
    int32_t *seg = calloc(TILE + 1, sizeof(int32_t));
    int32_t *next = calloc(TILE + 1, sizeof(int32_t));
    if (!left || !seg || !next) {
        fprintf(stderr, "dp: out of memory\n");
        return 1;
    }
    int32_t gap = 2, best = 0;
    double total = 0;
    for (int it = 0; it < iterations; it++) {
        double begin = now_ms();
        for (size_t c0 = 0; c0 < COLS; c0 += TILE) {
            size_t c1 = c0 + TILE < COLS ? c0 + TILE : COLS;
            for (size_t k = 0; k <= TILE; k++)
                seg[k] = 0;
            for (size_t i = 0; i < rows; i++) {
                int32_t diag = seg[0], h = left[i];
                next[0] = h;
                for (size_t j = c0; j < c1; j++) {
                    int32_t up = seg[j - c0 + 1];
                    h = max32(max32(max32(0, diag + score[i * COLS + j]), up - gap), h - gap);
                    next[j - c0 + 1] = h;
                    diag = up;
                    best = max32(best, h);
                }
                left[i] = h;
                int32_t *swap = seg;
                seg = next;
                next = swap;
            }
        }
        for (size_t i = 0; i < rows; i++)
            left[i] = 0;
        gap = 2 + (gap - 1) % 3;
        if (it >= WARM_UP)
            total += now_ms() - begin;
    }
    printf("%.2f\n", total / (iterations - WARM_UP));
    /* The result is used, so the sweeps cannot be left out. */
    return best < 0;
}
