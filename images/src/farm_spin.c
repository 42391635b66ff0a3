/* farm_spin: an idle-cycle CPU target for farm's ipbench-style load test, like ipbench's cpu_target
 * (cyclesoak): one spinner thread per online core, pinned to it, at the lowest priority Linux has
 * (SCHED_IDLE, nice 19, its autogroup's nice 19), counting its own loop iterations. A spinner runs only when nothing else
 * wants its core, so the iterations it counts over a window, against what it counts on an idle
 * system in the same time (calibrated by farm before the load), are the idle share of the window.
 *
 *   farm_spin -d [-f FILE]   start the spinners as a daemon; counters in FILE (default
 *                            /tmp/farm_spin.counts, mapped shared: the initrd has no /dev/shm); prints "farm_spin: cores N pid P"
 *   farm_spin -r [-f FILE]   print the counters once, with the target's CLOCK_MONOTONIC time and the
 *                            spinners' own CPU time (utime+stime of the daemon, USER_HZ ticks, from
 *                            /proc/PID/stat: what /proc/stat counts as busy but is the spinners'):
 *                            "farm_spin t=SECONDS ticks=T cores=N count=SUM c0=.. c1=.."
 * Errors go to stderr with exit status 1 (2 for a bad option).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_CORES 256
#define LINE 64 /* a counter per cache line: the spinners never share one */

struct shared {
	int64_t pid;
	int64_t cores;
	char pad[LINE - 16];
	struct {
		volatile uint64_t count;
		char pad[LINE - 8];
	} core[MAX_CORES];
};

static struct shared *shm;

static void die(const char *what)
{
	fprintf(stderr, "farm_spin: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void *spin(void *arg)
{
	long k = (long)arg;
	cpu_set_t set;
	struct sched_param none = {0};
	uint64_t local = shm->core[k].count;

	CPU_ZERO(&set);
	CPU_SET((int)k, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
		fprintf(stderr, "farm_spin: core %ld: cannot pin\n", k);
	sched_setscheduler(0, SCHED_IDLE, &none); /* this thread only (Linux: a thread's own tid) */
	for (;;) {
		for (int i = 0; i < 4096; i++)
			__asm__ volatile("" ::: "memory"); /* a loop the compiler keeps */
		local += 4096;
		__atomic_store_n(&shm->core[k].count, local, __ATOMIC_RELAXED);
	}
	return NULL;
}

static struct shared *map(const char *file, int create)
{
	int fd = open(file, create ? O_RDWR | O_CREAT | O_TRUNC : O_RDONLY, 0644);
	if (fd < 0)
		die(file);
	if (create && ftruncate(fd, sizeof(struct shared)) != 0)
		die(file);
	void *p = mmap(NULL, sizeof(struct shared), create ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die(file);
	close(fd);
	return p;
}

static long ticks_of(long pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		die(path);
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the command name may hold spaces: fields count from after it */
	unsigned long utime, stime;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2) {
		fprintf(stderr, "farm_spin: %s: unexpected format\n", path);
		exit(1);
	}
	return (long)(utime + stime);
}

int main(int argc, char **argv)
{
	const char *file = "/tmp/farm_spin.counts";
	int daemon_mode = 0, read_mode = 0, opt;

	while ((opt = getopt(argc, argv, "drf:")) != -1) {
		switch (opt) {
		case 'd': daemon_mode = 1; break;
		case 'r': read_mode = 1; break;
		case 'f': file = optarg; break;
		default: goto usage;
		}
	}
	if (daemon_mode == read_mode || optind != argc)
		goto usage;
	if (read_mode) {
		struct timespec ts;
		shm = map(file, 0);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t sum = 0, c[MAX_CORES];
		long cores = (long)shm->cores;
		if (cores < 1 || cores > MAX_CORES) {
			fprintf(stderr, "farm_spin: %s: no spinners recorded\n", file);
			return 1;
		}
		for (long k = 0; k < cores; k++)
			sum += c[k] = __atomic_load_n(&shm->core[k].count, __ATOMIC_RELAXED);
		printf("farm_spin t=%.6f ticks=%ld cores=%ld count=%llu", (double)ts.tv_sec + ts.tv_nsec / 1e9,
		       ticks_of((long)shm->pid), cores, (unsigned long long)sum);
		for (long k = 0; k < cores; k++)
			printf(" c%ld=%llu", k, (unsigned long long)c[k]);
		printf("\n");
		return 0;
	}
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if (cores < 1 || cores > MAX_CORES) {
		fprintf(stderr, "farm_spin: %ld cores: expected 1-%d\n", cores, MAX_CORES);
		return 1;
	}
	shm = map(file, 1);
	if (setpriority(PRIO_PROCESS, 0, 19) != 0)
		die("setpriority");
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (child > 0) { /* recorded before it returns: a reader right after finds the spinners */
		shm->pid = child;
		shm->cores = cores;
		printf("farm_spin: cores %ld pid %ld\n", cores, (long)child);
		return 0;
	}
	/* A new session is a new autogroup (CONFIG_SCHED_AUTOGROUP): the scheduler shares CPU fairly
	 * between groups first, so SCHED_IDLE threads in a group of their own would get a whole group's
	 * share against the load's. The group's nice 19 (weight 15 of 1024) makes them give way again. */
	setsid();
	FILE *ag = fopen("/proc/self/autogroup", "w");
	if (ag) {
		fputs("19", ag);
		fclose(ag);
	}
	if (!freopen("/dev/null", "r", stdin) || !freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
		die("/dev/null");
	pthread_t t;
	for (long k = 0; k < cores; k++)
		if (pthread_create(&t, NULL, spin, (void *)k) != 0)
			die("pthread_create");
	pause();
	return 0;
usage:
	fprintf(stderr, "usage: farm_spin -d [-f FILE] | farm_spin -r [-f FILE]\n");
	return 2;
}
