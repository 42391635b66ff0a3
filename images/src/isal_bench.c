/*
 * isal_bench: storage-acceleration throughput of ISA-L (libisal) on the target, cold and warm.
 *
 * Usage: isal_bench [SECONDS [FILTER]]
 *   SECONDS  time per test, a positive number (default 1; upstream's perf programs use 3)
 *   FILTER   run only the tests whose name (e.g. "crc32_ieee_cold") contains this substring;
 *            one that matches no test is an error (an empty output must not look like a result)
 *
 * Prints one line per test in the format of ISA-L's own perf programs (include/test.h,
 * perf_print(), as used by `make perf_report`), which farm/bench/isal.py parses:
 *
 *   crc32_ieee_cold: runtime =    1000123 usecs, bandwidth 29600 MB in 1.0001 sec = 29597.03 MB/s
 *
 * MB is 10^6 bytes, as in upstream's perf_print() since 2019 ("total_units / (1000000)"); the
 * bytes counted per call follow upstream's perf programs too: everything read plus everything
 * written (xor_gen: sources + parity; pq_gen: sources + P + Q; erasure code encode: k data +
 * p parity fragments; decode: k surviving fragments read + the lost ones rebuilt; CRC and deflate:
 * the input only). Nothing else goes to stdout; errors go to stderr with exit status 1.
 *
 * Warm: every call works on the same WARM_BYTES (32 KiB) working set, which stays in cache.
 * Cold: every call does the same work, but on the next WARM_BYTES slot of a COLD_BYTES (64 MiB)
 * arena, more than the last-level cache of the boards we test, walking through it and wrapping
 * around, so the data comes from DRAM. Same call sizes in both modes: the difference between
 * the two lines is the memory system, not per-call overhead.
 *
 * Build (no pkg-config, so that a cross build only needs a sysroot with libisal-dev extracted):
 *   cc -O2 -o isal_bench isal_bench.c -I$SYSROOT/usr/include -L$SYSROOT/usr/lib/<triplet> -lisal
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <isa-l/crc.h>
#include <isa-l/erasure_code.h>
#include <isa-l/igzip_lib.h>
#include <isa-l/raid.h>

#ifndef WARM_BYTES
#define WARM_BYTES (32 * 1024)
#endif
#ifndef COLD_BYTES
#define COLD_BYTES (64 * 1024 * 1024)
#endif

#define ALIGN     64
#define XOR_SRCS  10 /* xor_gen: 10 sources + 1 parity, as upstream's xor_gen_perf */
#define PQ_SRCS   10 /* pq_gen: 10 sources + P + Q, as upstream's pq_gen_perf */
#define EC_K      10 /* data fragments */
#define EC_P      4  /* parity fragments */
#define EC_M      (EC_K + EC_P)
#define EC_NERRS  4  /* fragments lost and rebuilt by the decode test */
#define DEFLATE_LEVEL 1

/* Each fragment length is a multiple of 64 bytes, so that vectors stay 32-byte aligned. */
#define FRAG_LEN(nvects) ((WARM_BYTES / (nvects)) & ~(size_t) (ALIGN - 1))

static const unsigned char ec_lost[EC_NERRS] = { 0, 3, 6, 9 }; /* all data: the worst case */

struct bench {
        const char *name; /* without the _cold/_warm suffix */
        size_t slot;      /* bytes of one call's working set: the stride in the cold arena */
        size_t bytes;     /* bytes counted per call (read + written), see the header */
        int (*run)(struct bench *b, unsigned char *base); /* one call on a working set at base */
        void *state;
};

static double seconds_per_test = 1.0;
static unsigned char *warm_area, *cold_area;
static volatile uint32_t sink; /* keeps CRC results alive */

static double
now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void *
aligned(size_t size)
{
        void *p = NULL;
        if (posix_memalign(&p, ALIGN, size) != 0) {
                fprintf(stderr, "isal_bench: cannot allocate %zu bytes\n", size);
                exit(1);
        }
        return p;
}

/* Deterministic fill. Text-like (words from a small vocabulary) so that deflate sees
 * compressible input, as on a real storage path; random bytes would only exercise stored blocks. */
static void
fill(unsigned char *p, size_t n)
{
        static const char *const words[] = { "the ", "farm ", "boots ", "a ", "board ", "and ",
                                              "measures ", "storage ", "of ", "its ", "cpu ",
                                              "1024 ", "block ", "parity ", "crc ", "\n" };
        uint64_t x = 0x9e3779b97f4a7c15ull;
        size_t i = 0;
        while (i < n) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                const char *w = words[(x >> 33) % (sizeof(words) / sizeof(words[0]))];
                while (*w && i < n)
                        p[i++] = (unsigned char) *w++;
        }
}

/* --- the functions under test ------------------------------------------------------------- */

static int
run_crc16_t10dif(struct bench *b, unsigned char *base)
{
        sink += crc16_t10dif(0x1234, base, b->bytes);
        return 0;
}

static int
run_crc32_ieee(struct bench *b, unsigned char *base)
{
        sink += crc32_ieee(0x1234, base, b->bytes);
        return 0;
}

static int
run_crc32_iscsi(struct bench *b, unsigned char *base)
{
        sink += crc32_iscsi(base, (int) b->bytes, 0x1234);
        return 0;
}

static void
vectors(unsigned char *base, int n, size_t len, void **out)
{
        for (int i = 0; i < n; i++)
                out[i] = base + (size_t) i * len;
}

static int
run_xor_gen(struct bench *b, unsigned char *base)
{
        void *v[XOR_SRCS + 1];
        size_t len = FRAG_LEN(XOR_SRCS + 1);
        vectors(base, XOR_SRCS + 1, len, v);
        (void) b;
        return xor_gen(XOR_SRCS + 1, (int) len, v);
}

static int
run_pq_gen(struct bench *b, unsigned char *base)
{
        void *v[PQ_SRCS + 2];
        size_t len = FRAG_LEN(PQ_SRCS + 2);
        vectors(base, PQ_SRCS + 2, len, v);
        (void) b;
        return pq_gen(PQ_SRCS + 2, (int) len, v);
}

struct ec_state {
        unsigned char encode_matrix[EC_M * EC_K];
        unsigned char encode_tables[32 * EC_K * EC_P];
        unsigned char decode_tables[32 * EC_K * EC_NERRS];
        int survivors[EC_K]; /* fragment indexes read by the decode */
};

static int
run_ec_encode(struct bench *b, unsigned char *base)
{
        struct ec_state *s = b->state;
        size_t len = FRAG_LEN(EC_M);
        unsigned char *frag[EC_M];
        vectors(base, EC_M, len, (void **) frag);
        ec_encode_data((int) len, EC_K, EC_P, s->encode_tables, frag, &frag[EC_K]);
        return 0;
}

/* Decode slot layout: the EC_M fragments of a stripe, then EC_NERRS output fragments. */
static int
run_ec_decode(struct bench *b, unsigned char *base)
{
        struct ec_state *s = b->state;
        size_t len = FRAG_LEN(EC_M + EC_NERRS);
        unsigned char *frag[EC_M + EC_NERRS], *in[EC_K];
        vectors(base, EC_M + EC_NERRS, len, (void **) frag);
        for (int i = 0; i < EC_K; i++)
                in[i] = frag[s->survivors[i]];
        ec_encode_data((int) len, EC_K, EC_NERRS, s->decode_tables, in, &frag[EC_M]);
        return 0;
}

/* Decode tables as upstream's erasure_code_perf: invert the surviving rows of the encode matrix
 * (once, outside the timed loop: a storage system caches them per loss pattern). */
static int
ec_setup(struct ec_state *s)
{
        unsigned char b[EC_K * EC_K], d[EC_K * EC_K], c[EC_NERRS * EC_K];
        unsigned char lost[EC_M] = { 0 };
        int i, j, r;

        gf_gen_cauchy1_matrix(s->encode_matrix, EC_M, EC_K);
        ec_init_tables(EC_K, EC_P, &s->encode_matrix[EC_K * EC_K], s->encode_tables);
        for (i = 0; i < EC_NERRS; i++)
                lost[ec_lost[i]] = 1;
        for (i = 0, r = 0; i < EC_K; i++, r++) {
                while (lost[r])
                        r++;
                s->survivors[i] = r;
                memcpy(&b[EC_K * i], &s->encode_matrix[EC_K * r], EC_K);
        }
        if (gf_invert_matrix(b, d, EC_K) < 0)
                return -1;
        memset(c, 0, sizeof(c));
        for (i = 0; i < EC_NERRS; i++)
                for (j = 0; j < EC_K; j++)
                        for (r = 0; r < EC_K; r++)
                                c[EC_K * i + j] ^= gf_mul(d[EC_K * r + j],
                                                          s->encode_matrix[EC_K * ec_lost[i] + r]);
        ec_init_tables(EC_K, EC_NERRS, c, s->decode_tables);
        return 0;
}

/* Encode a stripe, rebuild the lost fragments, compare: a wrong result must not print a speed. */
static int
ec_check(struct ec_state *s)
{
        struct bench dec = { .state = s };
        size_t len = FRAG_LEN(EC_M + EC_NERRS);
        unsigned char *area = aligned((size_t) (EC_M + EC_NERRS) * len);
        unsigned char *frag[EC_M + EC_NERRS];
        int ok = 1;

        fill(area, (size_t) EC_K * len);
        vectors(area, EC_M + EC_NERRS, len, (void **) frag);
        ec_encode_data((int) len, EC_K, EC_P, s->encode_tables, frag, &frag[EC_K]);
        run_ec_decode(&dec, area);
        for (int i = 0; i < EC_NERRS; i++)
                ok &= memcmp(frag[EC_M + i], frag[ec_lost[i]], len) == 0;
        free(area);
        return ok ? 0 : -1;
}

struct deflate_state {
        struct isal_zstream stream;
        unsigned char *out;
        size_t out_size;
};

static int
run_deflate(struct bench *b, unsigned char *base)
{
        struct deflate_state *s = b->state;
        isal_deflate_reset(&s->stream);
        s->stream.next_in = base;
        s->stream.avail_in = (uint32_t) b->bytes;
        s->stream.next_out = s->out;
        s->stream.avail_out = (uint32_t) s->out_size;
        if (isal_deflate(&s->stream) != COMP_OK || s->stream.avail_in != 0 ||
            s->stream.internal_state.state != ZSTATE_END)
                return -1;
        return 0;
}

static int
deflate_setup(struct deflate_state *s)
{
        isal_deflate_init(&s->stream);
        s->stream.level = DEFLATE_LEVEL;
        s->stream.level_buf_size = ISAL_DEF_LVL1_DEFAULT;
        s->stream.level_buf = aligned(ISAL_DEF_LVL1_DEFAULT);
        s->stream.end_of_stream = 1;
        s->stream.flush = NO_FLUSH;
        s->out_size = WARM_BYTES * 2 + 1024; /* room for incompressible input too */
        s->out = aligned(s->out_size);
        return 0;
}

/* --- timing --------------------------------------------------------------------------------- */

/* Run b in one mode for seconds_per_test and print its perf line. Calls go in batches, doubling
 * until one batch takes 1/64 of the run, so that reading the clock costs < 0.1% even for 1 us
 * calls; only time spent in batches counts. */
static int
measure(struct bench *b, int cold)
{
        size_t slots = cold ? COLD_BYTES / b->slot : 1;
        unsigned char *area = cold ? cold_area : warm_area;
        size_t next = 0;
        unsigned long long calls = 0, batch = 1;
        double elapsed = 0.0;

        fill(area, cold ? COLD_BYTES : WARM_BYTES); /* same data for every test: parity written
                                                     * by one test must not become another's input */
        if (b->run(b, area) != 0) /* warm-up call, also checks the function reports success */
                return -1;
        while (elapsed < seconds_per_test) {
                double start = now();
                for (unsigned long long i = 0; i < batch; i++) {
                        if (b->run(b, area + next * b->slot) != 0)
                                return -1;
                        if (++next == slots)
                                next = 0;
                }
                double took = now() - start;
                elapsed += took;
                calls += batch;
                if (took < seconds_per_test / 64 && batch < (1ull << 40))
                        batch *= 2;
        }
        long long total = (long long) (calls * b->bytes);
        printf("%s_%s: ", b->name, cold ? "cold" : "warm");
        printf("runtime = %10lld usecs, bandwidth %lld MB in %.4f sec = %.2f MB/s\n",
               (long long) (elapsed * 1e6), total / 1000000, elapsed,
               (double) total / (1000000 * elapsed));
        fflush(stdout);
        return 0;
}

int
main(int argc, char **argv)
{
        static struct ec_state ec;
        static struct deflate_state defl;
        const char *filter = argc > 2 ? argv[2] : NULL;
        char name[128];
        int failed = 0, ran = 0;

        if (argc > 3 || (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0))) {
                fprintf(stderr, "usage: %s [SECONDS [FILTER]]\n", argv[0]);
                return argc > 3 ? 1 : 0;
        }
        if (argc > 1) {
                char *end;
                errno = 0;
                seconds_per_test = strtod(argv[1], &end);
                if (errno || *end || !(seconds_per_test > 0) || seconds_per_test > 3600) {
                        fprintf(stderr, "isal_bench: SECONDS %s: expected a number in (0, 3600]\n",
                                argv[1]);
                        return 1;
                }
        }

        struct bench benches[] = {
                { "crc16_t10dif", WARM_BYTES, WARM_BYTES, run_crc16_t10dif, NULL },
                { "crc32_ieee", WARM_BYTES, WARM_BYTES, run_crc32_ieee, NULL },
                { "crc32_iscsi", WARM_BYTES, WARM_BYTES, run_crc32_iscsi, NULL },
                { "xor_gen", (XOR_SRCS + 1) * FRAG_LEN(XOR_SRCS + 1),
                  (XOR_SRCS + 1) * FRAG_LEN(XOR_SRCS + 1), run_xor_gen, NULL },
                { "pq_gen", (PQ_SRCS + 2) * FRAG_LEN(PQ_SRCS + 2),
                  (PQ_SRCS + 2) * FRAG_LEN(PQ_SRCS + 2), run_pq_gen, NULL },
                { "erasure_code_encode", EC_M * FRAG_LEN(EC_M), EC_M * FRAG_LEN(EC_M),
                  run_ec_encode, &ec },
                { "erasure_code_decode", (EC_M + EC_NERRS) * FRAG_LEN(EC_M + EC_NERRS),
                  (EC_K + EC_NERRS) * FRAG_LEN(EC_M + EC_NERRS), run_ec_decode, &ec },
                { "igzip_deflate_l1", WARM_BYTES, WARM_BYTES, run_deflate, &defl },
        };

        if (ec_setup(&ec) != 0 || ec_check(&ec) != 0) {
                fprintf(stderr, "isal_bench: erasure code self-check failed\n");
                return 1;
        }
        deflate_setup(&defl);
        warm_area = aligned(WARM_BYTES);
        cold_area = aligned(COLD_BYTES);

        for (size_t i = 0; i < sizeof(benches) / sizeof(benches[0]); i++) {
                for (int cold = 1; cold >= 0; cold--) {
                        snprintf(name, sizeof(name), "%s_%s", benches[i].name, cold ? "cold" : "warm");
                        if (filter && !strstr(name, filter))
                                continue;
                        ran++;
                        if (measure(&benches[i], cold) != 0) {
                                fprintf(stderr, "isal_bench: %s: the function reported an error\n",
                                        name);
                                failed = 1;
                        }
                }
        }
        if (!ran) {
                fprintf(stderr, "isal_bench: no test name contains %s\n", filter);
                return 1;
        }
        return failed;
}
