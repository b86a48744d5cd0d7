/*
 * othello: an Othello player on a nanoPU node (nanoPU paper Table 1, "Othello
 * Player"). Our own code. A request carries a position (the bitboards of the
 * side to move and of its opponent) and a search depth; the program runs a
 * fixed-depth negamax with alpha-beta pruning over bitboards and replies with
 * the chosen square. The client's oracle (crates/apps/src/othello.rs) finds
 * the same move with a plain negamax. Every core serves context 0 (no state
 * between requests). Message format: README.md.
 */
#include <nanopu.h>
#include <rpc_server.h>
#include <nanopu_rt.h>

#define OTHELLO_OK 0
#define OTHELLO_MALFORMED 2
#define OTHELLO_PASS 64
#define OTHELLO_MAX_DEPTH 6
#define INF 1000000000L

/* The classic weighted-square table, row-major from square 0 (a1). */
static const int8_t square_weight[64] = {
    100, -20, 10, 5, 5, 10, -20, 100,
    -20, -50, -2, -2, -2, -2, -50, -20,
    10, -2, -1, -1, -1, -1, -2, 10,
    5, -2, -1, -1, -1, -1, -2, 5,
    5, -2, -1, -1, -1, -1, -2, 5,
    10, -2, -1, -1, -1, -1, -2, 10,
    -20, -50, -2, -2, -2, -2, -50, -20,
    100, -20, 10, 5, 5, 10, -20, 100,
};

/* No libgcc here (-nostdlib): bit counts by hand. */
static inline int popcount64(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555UL);
    x = (x & 0x3333333333333333UL) + ((x >> 2) & 0x3333333333333333UL);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fUL;
    return (int)((x * 0x0101010101010101UL) >> 56);
}

/* Index of the lowest set bit of x (x != 0). */
static inline int ctz64(uint64_t x)
{
    return popcount64((x & -x) - 1);
}

#define NOT_A 0xfefefefefefefefeUL /* no file-a squares: the result of shifting east */
#define NOT_H 0x7f7f7f7f7f7f7f7fUL /* no file-h squares: the result of shifting west */

/* One direction's shift of a bitboard, the wrapped-around file cleared. */
#define SH_E(b) (((b) << 1) & NOT_A)
#define SH_W(b) (((b) >> 1) & NOT_H)
#define SH_N(b) ((b) << 8)
#define SH_S(b) ((b) >> 8)
#define SH_NE(b) (((b) << 9) & NOT_A)
#define SH_NW(b) (((b) << 7) & NOT_H)
#define SH_SE(b) (((b) >> 7) & NOT_A)
#define SH_SW(b) (((b) >> 9) & NOT_H)

/* The squares from which own captures along one direction (a flood fill
 * over opponent discs, at most six long). */
#define MOVES_DIR(SH) do { \
        uint64_t x = SH(own) & opp; \
        x |= SH(x) & opp; x |= SH(x) & opp; x |= SH(x) & opp; \
        x |= SH(x) & opp; x |= SH(x) & opp; \
        moves |= SH(x) & empty; \
    } while (0)

static uint64_t legal_moves(uint64_t own, uint64_t opp)
{
    uint64_t empty = ~(own | opp), moves = 0;
    MOVES_DIR(SH_E); MOVES_DIR(SH_W); MOVES_DIR(SH_N); MOVES_DIR(SH_S);
    MOVES_DIR(SH_NE); MOVES_DIR(SH_NW); MOVES_DIR(SH_SE); MOVES_DIR(SH_SW);
    return moves;
}

#define FLIPS_DIR(SH) do { \
        uint64_t line = 0, x = SH(m); \
        while (x & opp) { line |= x; x = SH(x); } \
        if (x & own) out |= line; \
    } while (0)

static uint64_t flips(uint64_t own, uint64_t opp, int sq)
{
    uint64_t m = 1UL << sq, out = 0;
    FLIPS_DIR(SH_E); FLIPS_DIR(SH_W); FLIPS_DIR(SH_N); FLIPS_DIR(SH_S);
    FLIPS_DIR(SH_NE); FLIPS_DIR(SH_NW); FLIPS_DIR(SH_SE); FLIPS_DIR(SH_SW);
    return out;
}

/* row_weight[r][bits]: the weight of the discs `bits` on row r, built at
 * start so that the evaluation is 16 table loads. */
static int16_t row_weight[8][256];

static void build_row_weights(void)
{
    for (int r = 0; r < 8; r++)
        for (int bits = 0; bits < 256; bits++) {
            int s = 0;
            for (int f = 0; f < 8; f++)
                if (bits >> f & 1)
                    s += square_weight[8 * r + f];
            row_weight[r][bits] = (int16_t)s;
        }
}

static long evaluate(uint64_t own, uint64_t opp)
{
    long s = 0;
    for (int r = 0; r < 8; r++)
        s += row_weight[r][(own >> (8 * r)) & 255] - row_weight[r][(opp >> (8 * r)) & 255];
    return s;
}

static long negamax(uint64_t own, uint64_t opp, int depth, long alpha, long beta)
{
    if (depth == 0)
        return evaluate(own, opp);
    uint64_t moves = legal_moves(own, opp);
    if (moves == 0) {
        if (legal_moves(opp, own) == 0)
            return 1000L * (popcount64(own) - popcount64(opp));
        return -negamax(opp, own, depth - 1, -beta, -alpha);
    }
    long best = -INF;
    for (; moves; moves &= moves - 1) {
        int sq = ctz64(moves);
        uint64_t f = flips(own, opp, sq);
        long v = -negamax(opp & ~f, own | f | (1UL << sq), depth - 1, -beta, -alpha);
        if (v > best)
            best = v;
        if (v > alpha)
            alpha = v;
        if (alpha >= beta)
            break;
    }
    return best;
}

/* The first move (lowest square) of the highest negamax value, or PASS. */
static uint64_t choose(uint64_t own, uint64_t opp, int depth)
{
    uint64_t moves = legal_moves(own, opp), choice = OTHELLO_PASS;
    long best = -INF;
    for (; moves; moves &= moves - 1) {
        int sq = ctz64(moves);
        uint64_t f = flips(own, opp, sq);
        long v = -negamax(opp & ~f, own | f | (1UL << sq), depth - 1, -INF, -best);
        if (v > best) {
            best = v;
            choice = (uint64_t)sq;
        }
    }
    return choice;
}

static void serve_one(void)
{
    uint64_t hdr = lnic_read();
    uint32_t words = lnic_hdr_words(hdr);
    uint64_t tag = words > 0 ? lnic_read() : 0;
    if (words != 4 || lnic_hdr_len(hdr) != 32) {
        for (uint32_t i = 1; i < words; i++)
            (void)lnic_read();
        lnic_write_r(lnic_reply_hdr(hdr, 16));
        lnic_write_r(tag);
        lnic_write_i(OTHELLO_MALFORMED);
        return;
    }
    uint64_t own = lnic_read();
    uint64_t opp = lnic_read();
    uint64_t depth = lnic_read();
    if ((own & opp) || depth == 0 || depth > OTHELLO_MAX_DEPTH) {
        lnic_write_r(lnic_reply_hdr(hdr, 16));
        lnic_write_r(tag);
        lnic_write_i(OTHELLO_MALFORMED);
        return;
    }
    uint64_t choice = choose(own, opp, (int)depth);
    lnic_write_r(lnic_reply_hdr(hdr, 24));
    lnic_write_r(tag);
    lnic_write_i(OTHELLO_OK);
    lnic_write_r(choice);
}

NANOPU_RPC_SERVER(build_row_weights, serve_one)
