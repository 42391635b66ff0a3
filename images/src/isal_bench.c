/*
 * isal_bench: ISA-L (libisal 2.30) throughput on the target, measured the way ISA-L's own perf
 * programs measure it (`make perfs` / `make perf_report` upstream), in one program that farm can
 * ship in an initrd.
 *
 * Usage: isal_bench SECONDS [FILTER [FILE...]]
 *   SECONDS  timed run per test, a number in (0, 3600] (upstream's BENCHMARK_TIME is 3)
 *   FILTER   run only the tests whose name contains it, or one of its ","-separated parts
 *            ("" = all); one matching nothing is an error (an empty output must not look like a
 *            result)
 *   FILE     igzip corpus files: each is compressed (stateful and stateless) and decompressed
 *
 * What is measured, per test, as upstream's 2.30 sources do it (facts of those programs, checked
 * against them by tests/unit/test_isal_params.py; the code here is ours):
 *
 *   test                 warm (CACHED_TEST)              cold                          bytes counted
 *   crc16_t10dif,        one call on 8 KiB               one call on 2 * GT_L3         the buffer
 *   crc32_ieee, crc32_iscsi
 *   xor_gen              10 sources + 1 parity x 8 KiB   11 x (GT_L3 / 10)             11 x len
 *   pq_gen               10 sources + P + Q x 8 KiB      12 x ((GT_L3 / 10) & ~63)     12 x len
 *   erasure_code_encode  m=14, k=10, gf_gen_rs_matrix,   len = (GT_L3 / 14) & ~63      14 x len
 *                        len = (128 KiB / 14) & ~63
 *   erasure_code_decode  4 errors {2,4,5,7}, rebuilt from the 10 survivors  (same len)  14 x len
 *   igzip (per FILE)     the whole file in one call, the file in memory (upstream's igzip perfs
 *                        have no cold/warm)                                             file size
 *
 * GT_L3 is "some number > last level cache": upstream hard-codes 32 MiB; here it is twice the
 * largest cache of cpu0 in sysfs (/sys/devices/system/cpu/cpu0/cache/index* /size), at least
 * upstream's 32 MiB (the floor), and at most what lets the largest cold test (AES-XTS: 4 * GT_L3)
 * fit in half of MemAvailable (a "# isal_bench: warning:" line says so).
 *
 * Timing as upstream's BENCHMARK() (include/test.h): a calibration (not counted) finds how many
 * calls take 1/4 s, then that many calls are timed for SECONDS, topped up once if they fell short.
 *
 * Output (stdout), one perf line per test in upstream's perf_print() format, which
 * farm/bench/isal.py parses:
 *
 *   crc32_ieee_cold: runtime =    3000123 usecs, bandwidth 97509 MB in 3.0001 sec = 32501.03 MB/s
 *
 * (MB is 10^6 bytes). Before it, a line with the CPU clock read from cpufreq right before and
 * right after the timed part, on the CPU the test ran on (absent where there is no cpufreq):
 *
 *   crc32_ieee_cold: cpufreq cpu=0 before_khz=1500000 after_khz=1500000
 *
 * and a line with the CPU cycles the timed part took, from the cycle counter through
 * perf_event_open(PERF_COUNT_HW_CPU_CYCLES) on this thread, user and kernel, following it across
 * CPUs (absent where the kernel or the CPU has no cycle counter, or perf events are refused; the
 * "# isal_bench: pmu" line at the start says which): bytes is what the perf line counts, enabled
 * and running the counter's times (running < enabled: the counter was multiplexed, the count scaled)
 *
 *   crc32_ieee_cold: pmu cycles=201326592 bytes=97509 enabled_ns=3000123000 running_ns=3000123000
 *
 * igzip lines are named <test>@<file's base name>: igzip_file_perf (stateful isal_deflate of the
 * whole file, level 0: igzip_file_perf's defaults), igzip_stateless_file_perf
 * (isal_deflate_stateless, level 0: that program's defaults, until 2.26), isal_stateful_inflate
 * and isal_stateless_inflate (igzip_perf's names, of the level-0 stream), all counting the
 * uncompressed size. Lines starting with "#" describe the setup: GT_L3, and before each test its
 * buffers ("# xor_gen_cold: vects=11 len=3355443 bytes_per_call=36909873"). Errors go to stderr, exit 1.
 *
 * and the lab's crypto functions with OpenSSL (see "the lab's crypto functions" below).
 *
 * Build (no pkg-config, so that a cross build only needs a sysroot with libisal-dev and
 * libssl-dev extracted; Debian keeps opensslconf.h under usr/include/<triplet>):
 *   cc -O2 -o isal_bench isal_bench.c -I$SYSROOT/usr/include -I$SYSROOT/usr/include/<triplet> \
 *      -L$SYSROOT/usr/lib/<triplet> -lisal -lcrypto
 */
#define _GNU_SOURCE

#include <errno.h>
#include <glob.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include <isa-l/crc.h>
#include <isa-l/erasure_code.h>
#include <isa-l/igzip_lib.h>
#include <isa-l/raid.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

/* upstream's constants (2.30: crc/crc*_perf.c, raid/xor_gen_perf.c, raid/pq_gen_perf.c, erasure_code/erasure_code_perf.c) */
#define GT_L3_FLOOR    (32 * 1024 * 1024)
#define CRC_WARM_LEN   (8 * 1024)
#define RAID_SOURCES   10
#define RAID_WARM_LEN  (8 * 1024)
#define EC_M           14
#define EC_K           10
#define EC_NERRS       4
#define EC_WARM_TOTAL  (128 * 1024)
#define EC_LEN(total)  (((total) / EC_M) & ~(size_t) 63)
#define CRC_SEED       0x1234
#define IGZIP_LEVEL    0 /* igzip_file_perf's and igzip_stateless_file_perf's default */
#define IGZIP_LEVEL_BUF ISAL_DEF_LVL0_DEFAULT
static const unsigned char ec_errors[EC_NERRS] = { 2, 4, 5, 7 };

#define CALIBRATE_SECONDS 0.25

static double seconds_per_test;
static size_t gt_l3;
static volatile uint32_t sink; /* keeps results alive */

typedef int (*call_fn)(void *ctx);

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
        if (posix_memalign(&p, 64, size ? size : 64) != 0) {
                fprintf(stderr, "isal_bench: cannot allocate %zu bytes\n", size);
                exit(1);
        }
        return p;
}

/* Deterministic pseudo-random bytes (upstream fills with rand() or zeros; the functions timed
 * here do not depend on the values, but the erasure-code check needs distinct fragments). */
static void
fill(unsigned char *p, size_t n, uint64_t seed)
{
        uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
        size_t i = 0;
        for (; i + 8 <= n; i += 8) { /* a word at a time: cold buffers are large, the twin slow */
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                memcpy(p + i, &x, 8);
        }
        for (; i < n; i++)
                p[i] = (unsigned char) (x >> (8 * (i & 7)));
}

/* --- the machine ---------------------------------------------------------------------------- */

static long long
read_number(const char *path)
{
        FILE *f = fopen(path, "r");
        long long v = -1;
        if (!f)
                return -1;
        if (fscanf(f, "%lld", &v) != 1)
                v = -1;
        fclose(f);
        return v;
}

/* The largest cache of cpu0 in bytes, 0 when sysfs has none ("32K", "1024K", "16M"). */
static size_t
largest_cache(void)
{
        glob_t g;
        size_t largest = 0;
        if (glob("/sys/devices/system/cpu/cpu0/cache/index*/size", 0, NULL, &g) != 0)
                return 0;
        for (size_t i = 0; i < g.gl_pathc; i++) {
                FILE *f = fopen(g.gl_pathv[i], "r");
                unsigned long long v;
                char unit = 0;
                if (!f)
                        continue;
                int n = fscanf(f, "%llu%c", &v, &unit);
                fclose(f);
                if (n < 1)
                        continue;
                if (unit == 'K')
                        v <<= 10;
                else if (unit == 'M')
                        v <<= 20;
                else if (unit == 'G')
                        v <<= 30;
                if (v > largest)
                        largest = (size_t) v;
        }
        globfree(&g);
        return largest;
}

static size_t
mem_available(void)
{
        FILE *f = fopen("/proc/meminfo", "r");
        char line[256];
        unsigned long long kb = 0;
        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
                        break;
        fclose(f);
        return (size_t) kb * 1024;
}

static void
size_cold(void)
{
        size_t llc = largest_cache(), avail = mem_available();
        gt_l3 = 2 * llc > GT_L3_FLOOR ? 2 * llc : GT_L3_FLOOR;
        printf("# isal_bench: largest cache of cpu0 %zu bytes (sysfs; 0 = none), GT_L3 %zu bytes "
               "(2 x that, at least %d), MemAvailable %zu bytes\n", llc, gt_l3, GT_L3_FLOOR, avail);
        /* the largest cold allocation is AES-XTS's: 2 * GT_L3 of ciphertext and as much plaintext */
        if (avail && 4 * gt_l3 > avail / 2) {
                gt_l3 = avail / 8 & ~(size_t) 4095;
                printf("# isal_bench: warning: GT_L3 lowered to %zu bytes to fit in half of "
                       "MemAvailable: cold may be partly cached\n", gt_l3);
        }
}

static long long
cur_khz(int cpu)
{
        char path[96];
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", cpu);
        return read_number(path);
}

/* --- the cycle counter ---------------------------------------------------------------------- */

static int cycles_fd = -1; /* perf event of this thread's CPU cycles; -1: none */

static void
open_cycle_counter(void)
{
        struct perf_event_attr attr;
        memset(&attr, 0, sizeof(attr));
        attr.type = PERF_TYPE_HARDWARE;
        attr.size = sizeof(attr);
        attr.config = PERF_COUNT_HW_CPU_CYCLES;
        attr.disabled = 1;
        attr.exclude_hv = 1;
        attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
        /* this thread on any CPU: the count follows the process when it migrates */
        cycles_fd = (int) syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
        if (cycles_fd < 0)
                printf("# isal_bench: pmu none (perf_event_open cycles: %s): cycles/byte from the clock\n",
                       strerror(errno));
        else
                printf("# isal_bench: pmu cycles (perf_event_open PERF_COUNT_HW_CPU_CYCLES, user+kernel)\n");
}

struct cycle_reading {
        uint64_t value, enabled, running;
};

static struct cycle_reading cycles_base; /* the counter's times when it was last reset */

static void
cycles_start(void)
{
        if (cycles_fd >= 0) {
                ioctl(cycles_fd, PERF_EVENT_IOC_RESET, 0);
                /* the count restarts from 0, its enabled and running times do not */
                if (read(cycles_fd, &cycles_base, sizeof(cycles_base)) != (ssize_t) sizeof(cycles_base))
                        memset(&cycles_base, 0, sizeof(cycles_base));
                ioctl(cycles_fd, PERF_EVENT_IOC_ENABLE, 0);
        }
}

/* 0 and the reading since cycles_start(), or -1 when there is no counter or it did not count */
static int
cycles_stop(struct cycle_reading *r)
{
        if (cycles_fd < 0)
                return -1;
        ioctl(cycles_fd, PERF_EVENT_IOC_DISABLE, 0);
        if (read(cycles_fd, r, sizeof(*r)) != (ssize_t) sizeof(*r))
                return -1;
        r->enabled -= cycles_base.enabled;
        r->running -= cycles_base.running;
        return r->running == 0 || r->value == 0 ? -1 : 0;
}

/* --- timing (upstream's BENCHMARK: calibrate, then a timed run of at least SECONDS) ---------- */

static unsigned long long
iterations_for(double seconds, double per_call)
{
        double n = per_call > 0 ? seconds / per_call : 1e6;
        if (n < 1)
                return 1;
        if (n > 1e15)
                return 1000000000000000ull;
        return (unsigned long long) n + 1;
}

static int
timed(call_fn fn, void *ctx, unsigned long long n, double *took)
{
        double start = now();
        for (unsigned long long i = 0; i < n; i++)
                if (fn(ctx) != 0)
                        return -1;
        *took += now() - start;
        return 0;
}

/* Measure fn and print the test's cpufreq and perf lines. bytes: counted per call. */
static int
benchmark(const char *name, call_fn fn, void *ctx, long long bytes)
{
        double took = 0;
        unsigned long long n = 1;
        if (timed(fn, ctx, 1, &took) != 0) /* also proves the function succeeds */
                return -1;
        double calibrate = seconds_per_test / 4 < CALIBRATE_SECONDS ? seconds_per_test / 4
                                                                     : CALIBRATE_SECONDS;
        while (took < calibrate) {
                n = iterations_for(2 * calibrate, took / (double) n);
                took = 0;
                if (timed(fn, ctx, n, &took) != 0)
                        return -1;
        }
        double per_call = took / (double) n;

        int cpu = sched_getcpu();
        long long before = cpu >= 0 ? cur_khz(cpu) : -1;
        struct cycle_reading cycles;
        cycles_start();
        took = 0;
        unsigned long long calls = iterations_for(seconds_per_test, per_call);
        if (timed(fn, ctx, calls, &took) != 0)
                return -1;
        if (took < seconds_per_test) {
                unsigned long long more = iterations_for(seconds_per_test - took + 1.0 / 16,
                                                         took / (double) calls);
                if (timed(fn, ctx, more, &took) != 0)
                        return -1;
                calls += more;
        }
        int counted = cycles_stop(&cycles) == 0;
        long long after = cpu >= 0 ? cur_khz(cpu) : -1;
        int cpu_after = sched_getcpu();
        if (before > 0 && after > 0)
                printf("%s: cpufreq cpu=%d before_khz=%lld after_khz=%lld%s\n", name, cpu, before,
                       after, cpu_after == cpu ? "" : " migrated=1");

        long long total = (long long) calls * bytes;
        if (counted)
                printf("%s: pmu cycles=%llu bytes=%lld enabled_ns=%llu running_ns=%llu\n", name,
                       (unsigned long long) cycles.value, total, (unsigned long long) cycles.enabled,
                       (unsigned long long) cycles.running);
        printf("%s: runtime = %10lld usecs, bandwidth %lld MB in %.4f sec = %.2f MB/s\n", name,
               (long long) (took * 1e6), total / 1000000, took, (double) total / (1e6 * took));
        fflush(stdout);
        return 0;
}

/* --- CRC ------------------------------------------------------------------------------------ */

struct buf_ctx {
        unsigned char *buf;
        size_t len;
};

static int
call_crc16_t10dif(void *c)
{
        struct buf_ctx *b = c;
        sink += crc16_t10dif(CRC_SEED, b->buf, b->len);
        return 0;
}

static int
call_crc32_ieee(void *c)
{
        struct buf_ctx *b = c;
        sink += crc32_ieee(CRC_SEED, b->buf, b->len);
        return 0;
}

static int
call_crc32_iscsi(void *c)
{
        struct buf_ctx *b = c;
        sink += crc32_iscsi(b->buf, (int) b->len, CRC_SEED);
        return 0;
}

static int
perf_crc(const char *name, call_fn fn, int cold)
{
        struct buf_ctx b = { .len = cold ? 2 * gt_l3 : CRC_WARM_LEN };
        b.buf = aligned(b.len);
        fill(b.buf, b.len, 1);
        printf("# %s: vects=1 len=%zu bytes_per_call=%zu\n", name, b.len, b.len);
        int r = benchmark(name, fn, &b, (long long) b.len);
        free(b.buf);
        return r;
}

/* --- RAID ----------------------------------------------------------------------------------- */

struct vec_ctx {
        int vects;
        size_t len;
        void *v[RAID_SOURCES + 2];
};

static int
call_xor_gen(void *c)
{
        struct vec_ctx *x = c;
        return xor_gen(x->vects, (int) x->len, x->v);
}

static int
call_pq_gen(void *c)
{
        struct vec_ctx *x = c;
        return pq_gen(x->vects, (int) x->len, x->v);
}

static int
perf_raid(const char *name, call_fn fn, int parity, int cold)
{
        struct vec_ctx x = { .vects = RAID_SOURCES + parity };
        /* xor_gen_perf: GT_L3 / 10; pq_gen_perf masks to a multiple of 64 (pq_gen needs 32) */
        x.len = cold ? gt_l3 / RAID_SOURCES : RAID_WARM_LEN;
        if (parity == 2)
                x.len &= ~(size_t) 63;
        for (int i = 0; i < x.vects; i++) {
                x.v[i] = aligned(x.len);
                fill(x.v[i], x.len, (uint64_t) i + 2);
        }
        printf("# %s: vects=%d len=%zu bytes_per_call=%zu\n", name, x.vects, x.len,
               (size_t) x.vects * x.len);
        int r = benchmark(name, fn, &x, (long long) x.vects * (long long) x.len);
        for (int i = 0; i < x.vects; i++)
                free(x.v[i]);
        return r;
}

/* --- erasure code --------------------------------------------------------------------------- */

struct ec_ctx {
        size_t len;
        unsigned char *frag[EC_M], *rebuilt[EC_NERRS], *survivors[EC_K];
        unsigned char encode_tables[32 * EC_K * (EC_M - EC_K)];
        unsigned char decode_tables[32 * EC_K * EC_NERRS];
};

static int
call_ec_encode(void *c)
{
        struct ec_ctx *e = c;
        ec_encode_data((int) e->len, EC_K, EC_M - EC_K, e->encode_tables, e->frag, &e->frag[EC_K]);
        return 0;
}

static int
call_ec_decode(void *c)
{
        struct ec_ctx *e = c;
        ec_encode_data((int) e->len, EC_K, EC_NERRS, e->decode_tables, e->survivors, e->rebuilt);
        return 0;
}

/* Decode tables as erasure_code_perf: invert the survivors' rows of the RS matrix; the lost
 * fragments are data fragments, so their rows of the inverse rebuild them. Outside the timed part. */
static int
ec_setup(struct ec_ctx *e)
{
        unsigned char a[EC_M * EC_K], b[EC_K * EC_K], d[EC_K * EC_K], c[EC_NERRS * EC_K];
        unsigned char lost[EC_M] = { 0 };
        int i, r;

        gf_gen_rs_matrix(a, EC_M, EC_K);
        ec_init_tables(EC_K, EC_M - EC_K, &a[EC_K * EC_K], e->encode_tables);
        for (i = 0; i < EC_NERRS; i++)
                lost[ec_errors[i]] = 1;
        for (i = 0, r = 0; i < EC_K; i++, r++) {
                while (lost[r])
                        r++;
                e->survivors[i] = e->frag[r];
                memcpy(&b[EC_K * i], &a[EC_K * r], EC_K);
        }
        if (gf_invert_matrix(b, d, EC_K) < 0)
                return -1;
        for (i = 0; i < EC_NERRS; i++)
                memcpy(&c[EC_K * i], &d[EC_K * ec_errors[i]], EC_K);
        ec_init_tables(EC_K, EC_NERRS, c, e->decode_tables);
        return 0;
}

static int
perf_ec(int cold, int encode, int decode)
{
        struct ec_ctx e = { .len = EC_LEN(cold ? gt_l3 : EC_WARM_TOTAL) };
        int r = 0;
        for (int i = 0; i < EC_M; i++) {
                e.frag[i] = aligned(e.len);
                if (i < EC_K)
                        fill(e.frag[i], e.len, (uint64_t) i + 20);
        }
        for (int i = 0; i < EC_NERRS; i++)
                e.rebuilt[i] = aligned(e.len);
        if (ec_setup(&e) != 0) {
                fprintf(stderr, "isal_bench: erasure code: the survivors' matrix is singular\n");
                r = -1;
        }
        if (encode)
                printf("# erasure_code_encode_%s: m=%d k=%d matrix=rs len=%zu bytes_per_call=%zu\n",
                       cold ? "cold" : "warm", EC_M, EC_K, e.len, e.len * EC_M);
        if (decode)
                printf("# erasure_code_decode_%s: m=%d k=%d nerrs=%d errors=%d,%d,%d,%d matrix=rs "
                       "len=%zu bytes_per_call=%zu\n", cold ? "cold" : "warm", EC_M, EC_K, EC_NERRS,
                       ec_errors[0], ec_errors[1], ec_errors[2], ec_errors[3], e.len,
                       e.len * (EC_K + EC_NERRS));
        if (r == 0 && encode)
                r = benchmark(cold ? "erasure_code_encode_cold" : "erasure_code_encode_warm",
                              call_ec_encode, &e, (long long) e.len * EC_M);
        if (r == 0 && !encode) /* the parity the decode reads back */
                r = call_ec_encode(&e);
        if (r == 0 && decode)
                r = benchmark(cold ? "erasure_code_decode_cold" : "erasure_code_decode_warm",
                              call_ec_decode, &e, (long long) e.len * (EC_K + EC_NERRS));
        if (r == 0 && !decode)
                r = call_ec_decode(&e);
        /* a wrong result must not print a speed: erasure_code_perf checks after decoding too */
        for (int i = 0; r == 0 && i < EC_NERRS; i++)
                if (memcmp(e.rebuilt[i], e.frag[ec_errors[i]], e.len) != 0) {
                        fprintf(stderr, "isal_bench: erasure code: fragment %d not rebuilt\n",
                                ec_errors[i]);
                        r = -1;
                }
        for (int i = 0; i < EC_M; i++)
                free(e.frag[i]);
        for (int i = 0; i < EC_NERRS; i++)
                free(e.rebuilt[i]);
        return r;
}

/* --- igzip ---------------------------------------------------------------------------------- */

struct gz_ctx {
        unsigned char *in, *comp, *out, *level_buf;
        size_t in_len, comp_size, comp_len;
        struct isal_zstream stream;
        struct inflate_state state;
};

static void
gz_stream(struct gz_ctx *g)
{
        isal_deflate_init(&g->stream);
        g->stream.level = IGZIP_LEVEL;
        g->stream.level_buf = g->level_buf;
        g->stream.level_buf_size = IGZIP_LEVEL_BUF;
        g->stream.end_of_stream = 1;
        g->stream.flush = NO_FLUSH;
        g->stream.next_in = g->in;
        g->stream.avail_in = (uint32_t) g->in_len;
        g->stream.next_out = g->comp;
        g->stream.avail_out = (uint32_t) g->comp_size;
}

static int
call_deflate_stateful(void *c)
{
        struct gz_ctx *g = c;
        gz_stream(g);
        if (isal_deflate(&g->stream) != COMP_OK || g->stream.avail_in != 0 ||
            g->stream.internal_state.state != ZSTATE_END)
                return -1;
        g->comp_len = g->stream.total_out;
        return 0;
}

static int
call_deflate_stateless(void *c)
{
        struct gz_ctx *g = c;
        gz_stream(g);
        if (isal_deflate_stateless(&g->stream) != COMP_OK || g->stream.avail_in != 0)
                return -1;
        g->comp_len = g->stream.total_out;
        return 0;
}

static int
call_inflate_stateless(void *c)
{
        struct gz_ctx *g = c;
        isal_inflate_init(&g->state);
        g->state.next_in = g->comp;
        g->state.avail_in = (uint32_t) g->comp_len;
        g->state.next_out = g->out;
        g->state.avail_out = (uint32_t) g->in_len;
        g->state.crc_flag = ISAL_DEFLATE;
        if (isal_inflate_stateless(&g->state) != ISAL_DECOMP_OK || g->state.total_out != g->in_len)
                return -1;
        return 0;
}

static int
call_inflate_stateful(void *c)
{
        struct gz_ctx *g = c;
        isal_inflate_init(&g->state);
        g->state.next_in = g->comp;
        g->state.avail_in = (uint32_t) g->comp_len;
        g->state.next_out = g->out;
        g->state.avail_out = (uint32_t) g->in_len;
        if (isal_inflate(&g->state) != ISAL_DECOMP_OK || g->state.avail_in != 0 ||
            g->state.total_out != g->in_len)
                return -1;
        return 0;
}

static const char *
base_name(const char *path)
{
        const char *slash = strrchr(path, '/');
        return slash ? slash + 1 : path;
}

static int
read_file(const char *path, unsigned char **data, size_t *len)
{
        FILE *f = fopen(path, "rb");
        if (!f || fseek(f, 0, SEEK_END) != 0) {
                fprintf(stderr, "isal_bench: %s: %s\n", path, strerror(errno));
                if (f)
                        fclose(f);
                return -1;
        }
        long size = ftell(f);
        if (size <= 0 || size > (1L << 30)) {
                fprintf(stderr, "isal_bench: %s: size %ld: expected 1 byte to 1 GiB\n", path, size);
                fclose(f);
                return -1;
        }
        rewind(f);
        *data = aligned((size_t) size);
        *len = fread(*data, 1, (size_t) size, f);
        fclose(f);
        if (*len != (size_t) size) {
                fprintf(stderr, "isal_bench: %s: short read\n", path);
                free(*data);
                return -1;
        }
        return 0;
}

/* FILTER is one name part or several separated by ",": a test runs when its name contains one */
static int
wanted(const char *name, const char *filter)
{
        if (!filter)
                return 1;
        for (const char *part = filter; *part;) {
                size_t len = strcspn(part, ",");
                for (const char *at = name; len && (at = strchr(at, part[0])) != NULL; at++)
                        if (strncmp(at, part, len) == 0)
                                return 1;
                part += len;
                if (*part == ',')
                        part++;
        }
        return 0;
}

/* The igzip tests of one file; *ran counts those the filter let through. */
static int
perf_igzip(const char *path, const char *filter, int *ran)
{
        static const struct {
                const char *name;
                call_fn fn;
        } tests[] = {
                { "igzip_file_perf", call_deflate_stateful },
                { "igzip_stateless_file_perf", call_deflate_stateless },
                { "isal_stateful_inflate", call_inflate_stateful },
                { "isal_stateless_inflate", call_inflate_stateless },
        };
        struct gz_ctx g = { 0 };
        char name[256];
        int r = 0, any = 0;

        for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
                snprintf(name, sizeof(name), "%s@%s", tests[i].name, base_name(path));
                any |= wanted(name, filter);
        }
        if (!any)
                return 0;
        if (read_file(path, &g.in, &g.in_len) != 0)
                return -1;
        g.comp_size = 2 * g.in_len + 1024 + ISAL_DEF_MAX_HDR_SIZE; /* upstream's over-estimate */
        g.comp = aligned(g.comp_size);
        g.out = aligned(g.in_len);
        g.level_buf = aligned(IGZIP_LEVEL_BUF);
        /* compress once and check the round trip before timing anything */
        if (call_deflate_stateless(&g) != 0 || call_inflate_stateless(&g) != 0 ||
            memcmp(g.in, g.out, g.in_len) != 0) {
                fprintf(stderr, "isal_bench: %s: igzip round trip failed\n", path);
                r = -1;
        }
        if (r == 0)
                printf("# igzip %s: in_size=%zu out_size=%zu level=%d\n", base_name(path),
                       g.in_len, g.comp_len, IGZIP_LEVEL);
        for (size_t i = 0; r == 0 && i < sizeof(tests) / sizeof(tests[0]); i++) {
                snprintf(name, sizeof(name), "%s@%s", tests[i].name, base_name(path));
                if (!wanted(name, filter))
                        continue;
                ++*ran;
                printf("# %s: level=%d len=%zu bytes_per_call=%zu\n", name, IGZIP_LEVEL, g.in_len,
                       g.in_len);
                if (benchmark(name, tests[i].fn, &g, (long long) g.in_len) != 0) {
                        fprintf(stderr, "isal_bench: %s: the function reported an error\n", name);
                        r = -1;
                }
        }
        free(g.in);
        free(g.comp);
        free(g.out);
        free(g.level_buf);
        return r;
}

/* --- the lab's crypto functions, with OpenSSL's EVP ----------------------------------------- */
/*
 * The lab's table has isa-l_crypto's aes_xts_128_dec, aes_xts_256_dec, md5_mb, sha1_mb, sha256,
 * sha512; Debian 12 has no isa-l_crypto, so these are the OpenSSL side of isa-l_crypto's own
 * *_ossl_perf programs (v2.24: aes/xts_{128,256}_dec_ossl_perf.c, md5_mb/md5_mb_vs_ossl_perf.c,
 * sha{1,256,512}_mb/sha*_mb_vs_ossl_perf.c), with their sizes, under the lab's names except where
 * a name would say what did not run: md5_mb and sha1_mb are isa-l_crypto's multi-buffer functions,
 * OpenSSL hashes one buffer after the other, so those are named md5 and sha1; the library is named
 * in a "# crypto: impl=" line (farm records it as impl=openssl-<major>.<minor>):
 *
 *   aes_xts_*_dec  warm: one decrypt (EVP_DecryptInit_ex/Update/Final) of 8 KiB; cold: of 2 * GT_L3,
 *                  in data units of at most 16 MiB (OpenSSL 3 refuses a longer XTS data unit,
 *                  so upstream's one 64 MiB call fails there), each with its own tweak
 *   md5, sha1, sha256, sha512
 *                  32 buffers hashed one after the other (EVP_DigestInit_ex/Update/Final on a
 *                  fetched digest; OpenSSL 3.0 has no multi-buffer hashing), each 4 KiB warm,
 *                  GT_L3 / 32 cold; bytes: 32 x the buffer
 */
#define XTS_WARM_LEN   (8 * 1024)
#define XTS_MAX_UNIT   (16 * 1024 * 1024)
#define HASH_BUFS      32
#define HASH_WARM_LEN  (4 * 1024)

struct xts_ctx {
        EVP_CIPHER_CTX *ctx;
        EVP_CIPHER *cipher;
        unsigned char key[64], iv[16];
        unsigned char *ct, *dt;
        size_t len, unit;
};

static int
call_xts_dec(void *c)
{
        struct xts_ctx *x = c;
        int outlen, tmplen;
        for (size_t off = 0; off < x->len; off += x->unit) {
                size_t n = x->len - off < x->unit ? x->len - off : x->unit;
                x->iv[0] = (unsigned char) (off / x->unit); /* the data unit's number as its tweak */
                if (!EVP_DecryptInit_ex(x->ctx, x->cipher, NULL, x->key, x->iv) ||
                    !EVP_DecryptUpdate(x->ctx, x->dt + off, &outlen, x->ct + off, (int) n) ||
                    !EVP_DecryptFinal_ex(x->ctx, x->dt + off + outlen, &tmplen))
                        return -1;
        }
        return 0;
}

static int
perf_xts(const char *name, const char *cipher, int key_bytes, int cold)
{
        struct xts_ctx x = { .len = cold ? 2 * gt_l3 : XTS_WARM_LEN };
        int r = -1;
        x.unit = x.len < XTS_MAX_UNIT ? x.len : XTS_MAX_UNIT;
        x.ctx = EVP_CIPHER_CTX_new();
        x.cipher = EVP_CIPHER_fetch(NULL, cipher, NULL);
        if (!x.ctx || !x.cipher) {
                fprintf(stderr, "isal_bench: %s: OpenSSL has no %s\n", name, cipher);
                goto out;
        }
        fill(x.key, (size_t) key_bytes, 7); /* two different keys: OpenSSL refuses equal halves */
        fill(x.iv, sizeof(x.iv), 8);
        x.ct = aligned(x.len);
        x.dt = aligned(x.len);
        fill(x.ct, x.len, 9);
        printf("# %s: cipher=%s vects=1 len=%zu unit=%zu bytes_per_call=%zu\n", name, cipher, x.len,
               x.unit, x.len);
        r = benchmark(name, call_xts_dec, &x, (long long) x.len);
        free(x.ct);
        free(x.dt);
out:
        EVP_CIPHER_free(x.cipher);
        EVP_CIPHER_CTX_free(x.ctx);
        return r;
}

struct hash_ctx {
        EVP_MD_CTX *ctx;
        EVP_MD *md;
        unsigned char *buf[HASH_BUFS];
        unsigned char digest[HASH_BUFS][EVP_MAX_MD_SIZE];
        size_t len;
};

static int
call_hash(void *c)
{
        struct hash_ctx *h = c;
        for (int i = 0; i < HASH_BUFS; i++)
                if (!EVP_DigestInit_ex(h->ctx, h->md, NULL) ||
                    !EVP_DigestUpdate(h->ctx, h->buf[i], h->len) ||
                    !EVP_DigestFinal_ex(h->ctx, h->digest[i], NULL))
                        return -1;
        return 0;
}

static int
perf_hash(const char *name, const char *digest, int cold)
{
        struct hash_ctx h = { .len = cold ? gt_l3 / HASH_BUFS : HASH_WARM_LEN };
        int r = -1;
        h.ctx = EVP_MD_CTX_new();
        h.md = EVP_MD_fetch(NULL, digest, NULL);
        if (!h.ctx || !h.md) {
                fprintf(stderr, "isal_bench: %s: OpenSSL has no %s\n", name, digest);
                goto out;
        }
        for (int i = 0; i < HASH_BUFS; i++) {
                h.buf[i] = aligned(h.len);
                fill(h.buf[i], h.len, (uint64_t) i + 40);
        }
        printf("# %s: digest=%s vects=%d len=%zu bytes_per_call=%zu\n", name, digest, HASH_BUFS,
               h.len, (size_t) HASH_BUFS * h.len);
        r = benchmark(name, call_hash, &h, (long long) HASH_BUFS * (long long) h.len);
        for (int i = 0; i < HASH_BUFS; i++)
                free(h.buf[i]);
out:
        EVP_MD_free(h.md);
        EVP_MD_CTX_free(h.ctx);
        return r;
}

/* --- main ----------------------------------------------------------------------------------- */

int
main(int argc, char **argv)
{
        static const struct {
                const char *name;
                call_fn fn;
        } crcs[] = {
                { "crc16_t10dif", call_crc16_t10dif },
                { "crc32_ieee", call_crc32_ieee },
                { "crc32_iscsi", call_crc32_iscsi },
        };
        static const struct {
                const char *name, *cipher;
                int key_bytes;
        } xts[] = {
                { "aes_xts_128_dec", "AES-128-XTS", 32 },
                { "aes_xts_256_dec", "AES-256-XTS", 64 },
        };
        static const struct {
                const char *name, *digest;
        } hashes[] = {
                { "md5", "MD5" },
                { "sha1", "SHA1" },
                { "sha256", "SHA256" },
                { "sha512", "SHA512" },
        };
        const char *filter = argc > 2 && argv[2][0] ? argv[2] : NULL;
        char name[128];
        int failed = 0, ran = 0;

        if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
                fprintf(stderr, "usage: %s SECONDS [FILTER [FILE...]]\n", argv[0]);
                return argc < 2 ? 1 : 0;
        }
        char *end;
        errno = 0;
        seconds_per_test = strtod(argv[1], &end);
        if (errno || *end || !(seconds_per_test > 0) || seconds_per_test > 3600) {
                fprintf(stderr, "isal_bench: SECONDS %s: expected a number in (0, 3600]\n", argv[1]);
                return 1;
        }
        size_cold();
        open_cycle_counter();
        printf("# crypto: impl=openssl-%u.%u (%s)\n", (unsigned) OPENSSL_version_major(),
               (unsigned) OPENSSL_version_minor(), OpenSSL_version(OPENSSL_VERSION));

        for (int cold = 1; cold >= 0; cold--) {
                const char *mode = cold ? "cold" : "warm";
                for (size_t i = 0; i < sizeof(crcs) / sizeof(crcs[0]); i++) {
                        snprintf(name, sizeof(name), "%s_%s", crcs[i].name, mode);
                        if (wanted(name, filter) && (++ran, perf_crc(name, crcs[i].fn, cold) != 0))
                                failed = 1;
                }
                snprintf(name, sizeof(name), "xor_gen_%s", mode);
                if (wanted(name, filter) && (++ran, perf_raid(name, call_xor_gen, 1, cold) != 0))
                        failed = 1;
                snprintf(name, sizeof(name), "pq_gen_%s", mode);
                if (wanted(name, filter) && (++ran, perf_raid(name, call_pq_gen, 2, cold) != 0))
                        failed = 1;
                /* one program measures encode and decode on the same buffers, as upstream's */
                snprintf(name, sizeof(name), "erasure_code_encode_%s", mode);
                char dec[128];
                snprintf(dec, sizeof(dec), "erasure_code_decode_%s", mode);
                int encode = wanted(name, filter), decode = wanted(dec, filter);
                ran += encode + decode;
                if ((encode || decode) && perf_ec(cold, encode, decode) != 0)
                        failed = 1;
                for (size_t i = 0; i < sizeof(xts) / sizeof(xts[0]); i++) {
                        snprintf(name, sizeof(name), "%s_%s", xts[i].name, mode);
                        if (wanted(name, filter) &&
                            (++ran, perf_xts(name, xts[i].cipher, xts[i].key_bytes, cold) != 0))
                                failed = 1;
                }
                for (size_t i = 0; i < sizeof(hashes) / sizeof(hashes[0]); i++) {
                        snprintf(name, sizeof(name), "%s_%s", hashes[i].name, mode);
                        if (wanted(name, filter) && (++ran, perf_hash(name, hashes[i].digest, cold) != 0))
                                failed = 1;
                }
        }
        for (int i = 3; i < argc; i++)
                if (perf_igzip(argv[i], filter, &ran) != 0)
                        failed = 1;
        if (!ran) {
                fprintf(stderr, "isal_bench: no test name contains %s\n", filter ? filter : "");
                return 1;
        }
        if (failed)
                fprintf(stderr, "isal_bench: a test failed (see above)\n");
        return failed;
}
