/* farm_lukem: the target's CPU target for farm's ipbench sweeps: ipbench's cpu_target_lukem
 * measurement, served over ipbench's target protocol (TCP), written for farm.
 *
 * The measurement (cpu_target_lukem's): one thread at the lowest priority reads the cycle counter
 * in a loop; each gap between two reads is added to the total, and a gap shorter than THRESHOLD
 * ticks (default 300, cpu_target_lukem's PROFILE_CONTEXT_COST) also to the idle time: a longer gap
 * means something else ran. It runs from SETUP to STOP; utilisation = (1 - idle/total) * 100.
 * The counter is the one ipbench reads: cntvct_el0 on arm64 (its frequency is cntfrq_el0), the
 * TSC on x86-64 (its frequency measured here against CLOCK_MONOTONIC over the same run).
 * "Lowest priority": SCHED_IDLE and nice 19 for the thread, nice 19 for the daemon's autogroup
 * (ipbench's nice(20) alone would not yield to other sessions under CONFIG_SCHED_AUTOGROUP).
 *
 * The protocol, as ipbench's controller and ipbenchd --target speak it (one connection at a time;
 * lines end in \n, a \r before it is ignored):
 *   on connect                -> 100 IPBENCH V1.0
 *   HELLO                     -> 200 OK (Ready to go)
 *   LOAD cpu_target_lukem     -> 200 OK                    (another test: 451 LOCAL PROCESSING ERROR)
 *   SETUP args::"..."         -> 200 OK                    the measuring thread starts (args are read
 *                                                          and ignored, as cpu_target_lukem ignores them)
 *   START                     -> (no reply, as ipbenchd's target)
 *   STOP                      -> 220 VALID DATA (Data to follow; counter=NAME hz=HZ threshold=T cpu=C)
 *                                Content-length: N
 *                                PERCENT,IDLE,TOTAL\n      (N bytes; PERCENT as cpu_target_lukem's "%.1f")
 *                                and the connection closes
 *   QUIT                      -> 222 CLOSING CONTROL CONNECTION (Come back soon!), closes
 *   ABORT                     -> stops the thread, closes
 *   HELP, STATUS              -> text, then 200 OK
 *   anything else, or out of order -> 500 SYNTAX ERROR
 * With ipbench's own controller (latency test with_cpu_target) the data completes the latency
 * line as ...,Median_RTT,CPU_Utilisation,Idle_Cycles,Total_Cycles.
 *
 * Usage: farm_lukem [-p PORT] [-t THRESHOLD] [-c CPU] [-d]
 *   -p PORT       TCP port (default 1236, the lab's --target-test-port)
 *   -t THRESHOLD  idle gap threshold in counter ticks (default 300)
 *   -c CPU        pin the measuring thread to core CPU (for tests against a known load on that
 *                 core; cpu_target_lukem's thread is not pinned, and neither is this by default)
 *   -d            daemonize once listening; prints "farm_lukem: port P pid N" either way
 * Errors go to stderr with exit status 1 (2 for a bad option).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LINE_MAX_LEN 1024

static uint64_t threshold = 300;
static long pin_cpu = -1;

#if defined(__aarch64__)
static const char *counter_name = "cntvct_el0";
static inline uint64_t get_cycles(void)
{
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
}
static uint64_t counter_hz(void)
{
	uint64_t f;
	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
	return f;
}
#elif defined(__x86_64__)
static const char *counter_name = "tsc";
static inline uint64_t get_cycles(void)
{
	unsigned int lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
static uint64_t counter_hz(void) { return 0; } /* not architectural: measured over the run */
#else
#error "farm_lukem: no cycle counter for this architecture"
#endif

/* one measurement: the thread's figures, written by it, read after it is joined */
static struct {
	volatile int run;
	volatile uint64_t idle, total;
	pthread_t thread;
	int active;
	uint64_t t0_ns, t1_ns, c0, c1;
} m;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *measure(void *arg)
{
	struct sched_param none = {0};
	uint64_t x0, x1, delta, idle = 0, total = 0;

	(void)arg;
	if (pin_cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET((int)pin_cpu, &set);
		if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
			fprintf(stderr, "farm_lukem: -c %ld: cannot pin\n", pin_cpu);
	}
	sched_setscheduler(0, SCHED_IDLE, &none); /* this thread (Linux: 0 is the calling thread) */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
	x0 = get_cycles();
	m.c0 = x0;
	m.t0_ns = mono_ns();
	while (__atomic_load_n(&m.run, __ATOMIC_RELAXED)) {
		x1 = x0;
		x0 = get_cycles();
		delta = x0 - x1;
		total += delta;
		if (delta < threshold) /* shorter than a context switch: nothing else ran */
			idle += delta;
		m.idle = idle; /* as cpu_target_lukem: the figures are stored every turn */
		m.total = total;
	}
	m.c1 = get_cycles();
	m.t1_ns = mono_ns();
	return NULL;
}

static int start_measuring(void)
{
	m.idle = m.total = 0;
	__atomic_store_n(&m.run, 1, __ATOMIC_RELAXED);
	if (pthread_create(&m.thread, NULL, measure, NULL) != 0)
		return -1;
	m.active = 1;
	return 0;
}

static void stop_measuring(void)
{
	if (!m.active)
		return;
	__atomic_store_n(&m.run, 0, __ATOMIC_RELAXED);
	pthread_join(m.thread, NULL);
	m.active = 0;
}

/* --- the connection ------------------------------------------------------------------------ */

struct conn {
	int fd;
	char buf[LINE_MAX_LEN];
	size_t len;
};

static int say(struct conn *c, const char *text)
{
	size_t n = strlen(text), off = 0;
	while (off < n) {
		ssize_t w = send(c->fd, text + off, n - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

/* the next line without its \n (and \r); 0 on success, -1 when the peer closed or on an error */
static int read_line(struct conn *c, char *line, size_t size)
{
	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		if (nl) {
			size_t n = (size_t)(nl - c->buf);
			size_t keep = n < size - 1 ? n : size - 1;
			memcpy(line, c->buf, keep);
			line[keep] = '\0';
			if (keep && line[keep - 1] == '\r')
				line[keep - 1] = '\0';
			memmove(c->buf, nl + 1, c->len - n - 1);
			c->len -= n + 1;
			return 0;
		}
		if (c->len == sizeof(c->buf))
			c->len = 0; /* a line longer than any command: dropped */
		ssize_t r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c->len += (size_t)r;
	}
}

static int word_is(const char *line, const char *word)
{
	size_t n = strlen(word);
	return strncmp(line, word, n) == 0 && (line[n] == '\0' || line[n] == ' ' || line[n] == '\t');
}

static const char *HELP =
	"\nHELP OPTIONS\n------------\nHELP\nHELLO\nLOAD\nSETUP args::<target-test-args>\nSTART\nSTOP\n"
	"ABORT\nSTATUS\nQUIT\n";

static void serve(int fd)
{
	enum { LISTEN, LOADING, SETTING, RUNNING, STARTED } state = LISTEN;
	struct conn c = { .fd = fd };
	char line[LINE_MAX_LEN], out[512];

	if (say(&c, "100 IPBENCH V1.0\n") != 0)
		return;
	while (read_line(&c, line, sizeof line) == 0) {
		if (word_is(line, "HELP")) {
			if (say(&c, HELP) || say(&c, "200 OK\n"))
				break;
		} else if (word_is(line, "STATUS")) {
			if (say(&c, "Target Daemon mode\n") ||
			    say(&c, m.active ? "Running a test (cpu_target_lukem)\n" : "Not running a test\n") ||
			    say(&c, "200 OK\n"))
				break;
		} else if (word_is(line, "QUIT")) {
			say(&c, "222 CLOSING CONTROL CONNECTION (Come back soon!)\n");
			break;
		} else if (word_is(line, "ABORT")) {
			break;
		} else if (state == LISTEN && word_is(line, "HELLO")) {
			if (say(&c, "200 OK (Ready to go)\n"))
				break;
			state = LOADING;
		} else if (state == LOADING && word_is(line, "LOAD")) {
			const char *test = line + 4;
			while (*test == ' ' || *test == '\t')
				test++;
			if (strcmp(test, "cpu_target_lukem") != 0) {
				snprintf(out, sizeof out, "451 LOCAL PROCESSING ERROR (no test %.200s here: farm_lukem "
					 "serves cpu_target_lukem)\n", test);
				say(&c, out);
				break;
			}
			if (say(&c, "200 OK\n"))
				break;
			state = SETTING;
		} else if (state == SETTING && word_is(line, "SETUP")) {
			if (start_measuring() != 0) {
				say(&c, "451 LOCAL PROCESSING ERROR (cannot start the measuring thread)\n");
				break;
			}
			if (say(&c, "200 OK\n"))
				break;
			state = RUNNING;
		} else if (state == RUNNING && word_is(line, "START")) {
			state = STARTED; /* ipbenchd's target answers START with nothing */
		} else if ((state == RUNNING || state == STARTED) && word_is(line, "STOP")) {
			char data[128];
			stop_measuring();
			uint64_t hz = counter_hz();
			if (!hz && m.t1_ns > m.t0_ns) /* x86: the TSC's rate over this run */
				hz = (uint64_t)((double)(m.c1 - m.c0) * 1e9 / (double)(m.t1_ns - m.t0_ns) + 0.5);
			double percent = m.total ? (1.0 - (double)m.idle / (double)m.total) * 100 : 0.0;
			snprintf(data, sizeof data, "%.1f,%llu,%llu\n", percent, (unsigned long long)m.idle,
				 (unsigned long long)m.total);
			snprintf(out, sizeof out, "220 VALID DATA (Data to follow; counter=%s hz=%llu threshold=%llu cpu=%ld)\n"
				 "Content-length: %zu\n%s", counter_name, (unsigned long long)hz,
				 (unsigned long long)threshold, pin_cpu, strlen(data), data);
			say(&c, out);
			break; /* ipbenchd's target closes after the data */
		} else {
			if (say(&c, "500 SYNTAX ERROR\n"))
				break;
		}
	}
	stop_measuring(); /* a client that went away mid-measurement: nothing left running */
}

static long number(const char *opt, const char *text, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || *text == '\0' || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "farm_lukem: %s %s: expected a whole number %ld-%ld\n", opt, text, lo, hi);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long port = 1236;
	int daemonize = 0, opt, fd, one = 1;
	struct sockaddr_in addr;

	while ((opt = getopt(argc, argv, "p:t:c:d")) != -1) {
		switch (opt) {
		case 'p': port = number("-p", optarg, 1, 65535); break;
		case 't': threshold = (uint64_t)number("-t", optarg, 1, 1000000000L); break;
		case 'c': pin_cpu = number("-c", optarg, 0, CPU_SETSIZE - 1); break;
		case 'd': daemonize = 1; break;
		default:
			fprintf(stderr, "usage: farm_lukem [-p PORT] [-t THRESHOLD] [-c CPU] [-d]\n");
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "usage: farm_lukem [-p PORT] [-t THRESHOLD] [-c CPU] [-d]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) {
		fprintf(stderr, "farm_lukem: socket: %s\n", strerror(errno));
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_port = htons((unsigned short)port);
	addr.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 1) != 0) {
		fprintf(stderr, "farm_lukem: port %ld: %s\n", port, strerror(errno));
		return 1;
	}
	if (daemonize) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "farm_lukem: fork: %s\n", strerror(errno));
			return 1;
		}
		if (pid > 0) {
			printf("farm_lukem: port %ld pid %d\n", port, (int)pid);
			return 0;
		}
		/* a session of its own is an autogroup of its own: at nice 19 it gives way to the load's */
		setsid();
		FILE *ag = fopen("/proc/self/autogroup", "w");
		if (ag) {
			fputs("19", ag);
			fclose(ag);
		}
		if (!freopen("/dev/null", "r", stdin) || !freopen("/dev/null", "w", stdout) ||
		    !freopen("/dev/null", "w", stderr))
			return 1;
	} else {
		printf("farm_lukem: port %ld pid %d\n", port, (int)getpid());
		fflush(stdout);
	}
	for (;;) {
		int client = accept(fd, NULL, NULL);
		if (client < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			fprintf(stderr, "farm_lukem: accept: %s\n", strerror(errno));
			return 1;
		}
		serve(client);
		close(client);
	}
}
