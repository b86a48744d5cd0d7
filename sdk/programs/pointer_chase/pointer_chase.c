/*
 * pointer_chase: dependent loads through a random cycle, the memory
 * latency kernel (and a `nanopu bench` kernel that is not matrix multiply).
 *
 * next[] holds one random cyclic permutation of WORDS entries (Sattolo's
 * algorithm, splitmix64 seeded), so every load's address is the previous
 * load's value: no two misses overlap, whatever the cache. ROUNDS times the
 * chase walks the whole cycle from entry 0.
 *
 * Self-check: each round ends back at entry 0 after exactly WORDS steps and
 * the sum of the visited indices is WORDS * (WORDS - 1) / 2 (every entry
 * once). Prints the mean cycles per dependent load of the last round.
 * Exit: 0 ok, 1 the cycle is not whole, 2 wrong index sum.
 * Cost: about 10 instructions per entry to build, 4 per step to chase
 * (WORDS = 2^17, ROUNDS = 4: about 3.4 M instructions); the table is 1 MB,
 * twice the nanoPU's 512 KB L2 by default.
 * Portable C (the cycle figure needs the SDK build).
 */
#include <stdint.h>
#include <stdio.h>

#ifndef WORDS
#define WORDS (1u << 17)
#endif
#ifndef ROUNDS
#define ROUNDS 4
#endif

static uint64_t next[WORDS];
static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t cycles(void)
{
#ifdef NANOPU_SDK
    uint64_t c;
    __asm__ volatile("rdcycle %0" : "=r"(c));
    return c;
#else
    return 0;
#endif
}

int main(void)
{
    for (uint64_t i = 0; i < WORDS; i++)
        next[i] = i;
    /* Sattolo: a uniformly random permutation with a single cycle. */
    for (uint64_t i = WORDS - 1; i > 0; i--) {
        uint64_t j = rng() % i;
        uint64_t t = next[i];
        next[i] = next[j];
        next[j] = t;
    }
    uint64_t per_load_x100 = 0;
    for (int r = 0; r < ROUNDS; r++) {
        uint64_t p = 0, steps = 0, sum = 0;
        uint64_t start = cycles();
        do {
            sum += p;
            p = next[p];
            steps++;
        } while (p != 0 && steps <= WORDS);
        uint64_t spent = cycles() - start;
        if (steps != WORDS) {
            printf("pointer_chase: round %d came back after %lu steps, not %u\n", r,
                   (unsigned long)steps, (unsigned)WORDS);
            return 1;
        }
        if (sum != (uint64_t)WORDS * (WORDS - 1) / 2) {
            printf("pointer_chase: round %d visited the wrong entries\n", r);
            return 2;
        }
        per_load_x100 = spent * 100 / WORDS;
    }
    printf("pointer_chase: %u entries (%u KB), %d rounds: %lu.%02lu cycles per dependent load\n",
           (unsigned)WORDS, (unsigned)(WORDS * 8 / 1024), ROUNDS,
           (unsigned long)(per_load_x100 / 100), (unsigned long)(per_load_x100 % 100));
    return 0;
}
