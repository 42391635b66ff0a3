/* farm_duty: a CPU load of known duty cycle, to test a CPU target against (farm_lukem).
 *
 * Each period (aligned to multiples of PERIOD on CLOCK_MONOTONIC) it spins for DUTY x PERIOD, then
 * sleeps until the next period begins, at the normal priority; for SECONDS in all, or until SIGTERM
 * or SIGINT (then it ends at the current period's end). At the end it prints what it did, by the
 * same clock:
 *   farm_duty duty=D period_ms=P cpu=C seconds=S busy=B wall=W achieved=A
 * B: seconds spent spinning (from the start of each busy phase to its end, whatever else ran in
 * between), W: seconds from the first period to the end of the last one run, A = B / W.
 *
 * Usage: farm_duty -u DUTY -s SECONDS [-P PERIOD_MS] [-c CPU]
 *   -u DUTY       share of each period spent spinning, 0-1
 *   -s SECONDS    how long to run at most (whole periods); a signal ends it sooner
 *   -P PERIOD_MS  the period in ms (default 10, a few scheduler ticks)
 *   -c CPU        run on core CPU (default: where the scheduler puts it)
 * It prints "farm_duty: running" once it runs (flushed), errors to stderr with exit 1 (2: an option).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double number(const char *opt, const char *text, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (errno || *text == '\0' || *end != '\0' || !(v >= lo && v <= hi)) { /* also refuses NaN */
		fprintf(stderr, "farm_duty: %s %s: expected a number %g-%g\n", opt, text, lo, hi);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	double duty = -1, seconds = 0, period_ms = 10;
	long cpu = -1;
	int opt;

	while ((opt = getopt(argc, argv, "u:s:P:c:")) != -1) {
		switch (opt) {
		case 'u': duty = number("-u", optarg, 0, 1); break;
		case 's': seconds = number("-s", optarg, 0.001, 86400); break;
		case 'P': period_ms = number("-P", optarg, 0.1, 10000); break;
		case 'c': cpu = (long)number("-c", optarg, 0, CPU_SETSIZE - 1); break;
		default: goto usage;
		}
	}
	if (duty < 0 || seconds <= 0 || optind != argc) {
usage:
		fprintf(stderr, "usage: farm_duty -u DUTY -s SECONDS [-P PERIOD_MS] [-c CPU]\n");
		return 2;
	}
	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET((int)cpu, &set);
		if (sched_setaffinity(0, sizeof set, &set) != 0) {
			fprintf(stderr, "farm_duty: -c %ld: %s\n", cpu, strerror(errno));
			return 1;
		}
	}
	int64_t period = (int64_t)(period_ms * 1e6 + 0.5), spin = (int64_t)(duty * (double)period + 0.5);
	long periods = (long)(seconds * 1e9 / (double)period);
	if ((double)periods * (double)period < seconds * 1e9)
		periods++; /* whole periods, at least SECONDS */
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0) {
		fprintf(stderr, "farm_duty: sigaction: %s\n", strerror(errno));
		return 1;
	}
	int64_t first = (now_ns() / period + 1) * period, busy = 0;
	long k;
	printf("farm_duty: running\n");
	fflush(stdout);
	for (k = 0; k < periods && !stop; k++) {
		int64_t begin = first + k * period, t;
		struct timespec ts = { .tv_sec = begin / 1000000000, .tv_nsec = begin % 1000000000 };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !stop)
			;
		if (stop)
			break; /* a signal in the sleep: this period has not begun */
		t = now_ns();
		int64_t until = begin + spin;
		if (t < until) {
			while (now_ns() < until)
				__asm__ __volatile__("" ::: "memory");
			busy += until - t;
		}
	}
	int64_t wall = k * period; /* the periods begun, each to its end */
	printf("farm_duty duty=%g period_ms=%g cpu=%ld seconds=%g busy=%.6f wall=%.6f achieved=%.6f\n", duty, period_ms,
	       cpu, seconds, (double)busy / 1e9, (double)wall / 1e9, wall ? (double)busy / (double)wall : 0.0);
	return 0;
}
