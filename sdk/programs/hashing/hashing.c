/*
 * hashing: integer hashing with branches and multiplies, a `nanopu bench`
 * compute kernel that is neither matrix multiply nor a memory-latency chase.
 *
 * Each round inserts KEYS pseudo-random 64-bit keys (splitmix64, seeded per
 * round) into an open-addressing table of SLOTS entries with linear probing,
 * hashed by a multiply-xorshift mixer; then looks every key up (all must be
 * found, with their values), looks up KEYS keys of another stream (almost
 * all absent: those found must really have been inserted), deletes every
 * other key with backward-shift deletion, and checks the survivors again.
 * Keys are also run through FNV-1a byte by byte with a data-dependent branch
 * per byte, so the loop mixes multiplies, loads, stores and unpredictable
 * branches.
 *
 * Self-check (independent of the simulator): every lookup result is checked
 * against what the program knows it inserted or deleted; the table's live
 * count is checked after each phase. Exit: 0 ok, 1 an inserted key was not
 * found (or had the wrong value), 2 a deleted key was still found, 3 a key
 * of the other stream was found but never inserted, 4 wrong live count.
 * Cost: about 9 M instructions (KEYS = 2048, ROUNDS = 8); the table is
 * 64 KB (larger than the 16 KB L1D, inside the L2).
 * Portable C.
 */
#include <stdint.h>
#include <stdio.h>

#ifndef KEYS
#define KEYS 2048u
#endif
#ifndef ROUNDS
#define ROUNDS 8
#endif
#define SLOTS (2 * KEYS) /* a power of two: load factor 1/2 */
#define EMPTY 0u         /* key 0 is never inserted (see key_of) */

struct slot {
    uint64_t key;
    uint64_t value;
};

static struct slot table[SLOTS];
static uint64_t keys[KEYS];
static unsigned live;

static uint64_t splitmix(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Never EMPTY: the low bit is forced on. */
static uint64_t key_of(uint64_t *state)
{
    return splitmix(state) | 1;
}

/* FNV-1a over the key's bytes, with a branch on each byte's value. */
static uint64_t fnv(uint64_t key)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int i = 0; i < 8; i++) {
        uint8_t b = (uint8_t)(key >> (8 * i));
        if (b & 0x80)
            h ^= b ^ 0x5a;
        else
            h ^= b;
        h *= 0x100000001b3ULL;
    }
    return h;
}

static unsigned slot_of(uint64_t key)
{
    uint64_t h = key * 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 29;
    return (unsigned)(h & (SLOTS - 1));
}

static void insert(uint64_t key, uint64_t value)
{
    unsigned i = slot_of(key);
    while (table[i].key != EMPTY) {
        if (table[i].key == key) {
            table[i].value = value;
            return;
        }
        i = (i + 1) & (SLOTS - 1);
    }
    table[i].key = key;
    table[i].value = value;
    live++;
}

/* 1 and the value in *value if present. */
static int lookup(uint64_t key, uint64_t *value)
{
    unsigned i = slot_of(key);
    while (table[i].key != EMPTY) {
        if (table[i].key == key) {
            *value = table[i].value;
            return 1;
        }
        i = (i + 1) & (SLOTS - 1);
    }
    return 0;
}

/* Backward-shift deletion: later entries of the probe run move up. */
static void delete(uint64_t key)
{
    unsigned i = slot_of(key);
    while (table[i].key != key) {
        if (table[i].key == EMPTY)
            return;
        i = (i + 1) & (SLOTS - 1);
    }
    unsigned hole = i;
    for (unsigned j = (i + 1) & (SLOTS - 1); table[j].key != EMPTY; j = (j + 1) & (SLOTS - 1)) {
        unsigned home = slot_of(table[j].key);
        /* Move j into the hole unless its home lies cyclically in (hole, j]. */
        int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            table[hole] = table[j];
            hole = j;
        }
    }
    table[hole].key = EMPTY;
    live--;
}

static int is_inserted(uint64_t key)
{
    for (unsigned k = 0; k < KEYS; k++)
        if (keys[k] == key)
            return 1;
    return 0;
}

int main(void)
{
    uint64_t digest = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (unsigned i = 0; i < SLOTS; i++)
            table[i].key = EMPTY;
        live = 0;
        uint64_t state = 0x243f6a8885a308d3ULL + (uint64_t)r;
        for (unsigned k = 0; k < KEYS; k++) {
            keys[k] = key_of(&state);
            insert(keys[k], fnv(keys[k]));
        }
        if (live != KEYS) {
            printf("hashing: round %d: %u live keys after inserting %u\n", r, live, KEYS);
            return 4;
        }
        for (unsigned k = 0; k < KEYS; k++) {
            uint64_t v;
            if (!lookup(keys[k], &v) || v != fnv(keys[k])) {
                printf("hashing: round %d: key %u lost\n", r, k);
                return 1;
            }
            digest += v;
        }
        uint64_t other = 0x13198a2e03707344ULL + (uint64_t)r;
        for (unsigned k = 0; k < KEYS; k++) {
            uint64_t v, key = key_of(&other);
            if (lookup(key, &v) && !is_inserted(key)) {
                printf("hashing: round %d: a key never inserted was found\n", r);
                return 3;
            }
        }
        for (unsigned k = 0; k < KEYS; k += 2)
            delete(keys[k]);
        if (live != KEYS / 2) {
            printf("hashing: round %d: %u live keys after deleting half\n", r, live);
            return 4;
        }
        for (unsigned k = 0; k < KEYS; k++) {
            uint64_t v;
            int found = lookup(keys[k], &v);
            if (k % 2 == 0 && found) {
                printf("hashing: round %d: deleted key %u still found\n", r, k);
                return 2;
            }
            if (k % 2 == 1 && (!found || v != fnv(keys[k]))) {
                printf("hashing: round %d: key %u lost after deletions\n", r, k);
                return 1;
            }
        }
    }
    printf("hashing: %u keys in %u slots, %d rounds: OK (digest %016llx)\n", KEYS, SLOTS, ROUNDS,
           (unsigned long long)digest);
    return 0;
}
