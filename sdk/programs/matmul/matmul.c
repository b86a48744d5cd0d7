/*
 * matmul: the simulator's speed benchmark.  REPS times C = A * B for N x N
 * matrices of 64-bit integers (arithmetic mod 2^64), then A = mix(C).
 *
 * Self-check, independent of the multiply loop, every repetition:
 *  - Freivalds: C v == A (B v) for a pseudo-random vector v (exact mod 2^64),
 *  - sum of all C[i][j] == sum_k colsum(A)[k] * rowsum(B)[k].
 * The running checksum is also compared with a reference value recorded
 * under qemu-riscv64 for the default N and REPS.
 *
 * Exit: 0 ok, 1 Freivalds mismatch, 2 sum mismatch, 3 checksum mismatch.
 * Cost: about 7 instructions per multiply-add, N^3 per repetition
 * (N=64, REPS=16: about 30 million instructions).
 * Portable C: also built for Linux (build/matmul.linux).
 */
#include <stdint.h>
#include <stdio.h>

#ifndef N
#define N 64
#endif
#ifndef REPS
#define REPS 16
#endif
/* Checksum for N=64, REPS=16 (recorded with qemu-riscv64 and the bare-metal build). */
#define REFERENCE_CHECKSUM 0x28f40a4daecb2063ULL

static uint64_t A[N][N], B[N][N], C[N][N];
static uint64_t v[N], bv[N], abv[N], cv[N];

static uint64_t rng_state = 0x853c49e6748fea9bULL;

static uint64_t rng(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void multiply(void)
{
    for (int i = 0; i < N; i++) {
        uint64_t *c = C[i];
        for (int j = 0; j < N; j++)
            c[j] = 0;
        for (int k = 0; k < N; k++) {
            uint64_t a = A[i][k];
            const uint64_t *b = B[k];
            for (int j = 0; j < N; j++)
                c[j] += a * b[j];
        }
    }
}

static void matvec(uint64_t (*m)[N], const uint64_t *x, uint64_t *y)
{
    for (int i = 0; i < N; i++) {
        uint64_t s = 0;
        for (int j = 0; j < N; j++)
            s += m[i][j] * x[j];
        y[i] = s;
    }
}

int main(void)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            A[i][j] = rng();
            B[i][j] = rng() >> (j & 7);
        }

    uint64_t checksum = 0;
    for (int r = 0; r < REPS; r++) {
        multiply();

        for (int j = 0; j < N; j++)
            v[j] = rng();
        matvec(B, v, bv);
        matvec(A, bv, abv);
        matvec(C, v, cv);
        for (int i = 0; i < N; i++)
            if (abv[i] != cv[i]) {
                printf("matmul: FAIL Freivalds check, repetition %d row %d: %016llx != %016llx\n",
                       r, i, (unsigned long long)cv[i], (unsigned long long)abv[i]);
                return 1;
            }

        uint64_t sum_c = 0, sum_ab = 0;
        for (int k = 0; k < N; k++) {
            uint64_t ca = 0, rb = 0;
            for (int i = 0; i < N; i++) {
                ca += A[i][k];
                rb += B[k][i];
            }
            sum_ab += ca * rb;
        }
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                sum_c += C[i][j];
        if (sum_c != sum_ab) {
            printf("matmul: FAIL sum check, repetition %d: %016llx != %016llx\n",
                   r, (unsigned long long)sum_c, (unsigned long long)sum_ab);
            return 2;
        }

        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) {
                uint64_t c = C[i][j];
                checksum = (checksum ^ c) * 0x100000001b3ULL;
                A[i][j] = c ^ (c >> 29) ^ (uint64_t)(i * N + j);
            }
    }

    printf("matmul: N=%d REPS=%d checksum=%016llx\n", N, REPS, (unsigned long long)checksum);
    if (N == 64 && REPS == 16 && REFERENCE_CHECKSUM != 0 && checksum != REFERENCE_CHECKSUM) {
        printf("matmul: FAIL checksum differs from the reference %016llx\n",
               (unsigned long long)REFERENCE_CHECKSUM);
        return 3;
    }
    printf("matmul: OK\n");
    return 0;
}
