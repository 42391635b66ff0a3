/* farm_load: the lab host's UDP load generator for farm's ipbench-style echo test.
 *
 * N clients (threads, one UDP socket each) send SIZE-byte datagrams to HOST:PORT, where farm_echo
 * sends each one back. Together they send RATE bit/s of UDP payload (each client RATE/N, client k
 * offset by k/N of the packet interval); every packet carries its send time, and its round trip is
 * timed when it comes back (CLOCK_MONOTONIC of this machine only: the target's clock is not used).
 *
 * The run is: warm-up (-w s), the measured window (-d s, or -N samples: the window then lasts
 * ceil(N/clients) packet intervals), cool-down (-c s); the load runs at the same rate throughout,
 * and replies are taken until the end of the cool-down, none later.
 *
 * What is printed (times are seconds since the load started):
 *   farm_load 1 host=H port=P clients=N size=S requested=R warmup=W duration=D cooldown=C samples=K
 *   window_start t=T      when the window opens (flushed at once: farm samples the target's CPU)
 *   window_end t=T        when it closes (flushed at once)
 *   client K sent=.. window_sent=.. received=.. samples=.. duplicates=.. send_errors=.. bad=..
 *   result requested=R send=.. receive=.. size=S n=.. min=.. avg=.. max=.. stdev=.. median=..
 *          window_start=.. window_end=.. load_end=.. first_tx=.. last_rx=.. lost=.. p10=.. p90=..  (one line)
 * with ipbench's definitions: send = payload bits sent in the window / window length, receive =
 * payload bits that came back in the window / window length (summed over clients); RTT statistics
 * in microseconds over every packet sent in the window that came back before the load ended:
 * population standard deviation, median the upper middle sample (sorted[n/2]), p10/p90 likewise
 * sorted[floor(n * 0.1)] and sorted[floor(n * 0.9)] (farm's, not ipbench's). first_tx/last_rx
 * are the earliest send and the latest reply among those samples. -o FILE writes every sample as
 * "client seq tx rx" (seconds). -S US is the senders' timer slack (default 50 µs, the kernel's
 * default): a packet leaves up to that late (the average rate holds); 1 paces more exactly and
 * costs a third more CPU at 1 Gb/s (benchmarks/echo_rate.py).
 *
 * -m ipbench runs ipbench's latency client instead (see run_ipbench below: busy-polling, the window
 * ended by SAMPLES replies per client, RTT by receive time, ipbench's integer figures); its output
 * has the same lines, with mode=ipbench in the header and more counts per client (late, dropped,
 * window_us, timed_out, ...) and in the result (late=, timeouts=: clients whose window the -T
 * time-out ended). -m paced (the default) is the method described above.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x6661726dU /* "farm" */
#define HEADER 24
#define MAX_CLIENTS 64
#define MAX_PACKETS (1L << 27)

struct client {
	int id, fd;
	long total, warm, window;
	int64_t offset_ns;
	int64_t *tx, *rx; /* per sequence number, ns since t0; -1: not sent / not received */
	long sent, received, duplicates, send_errors, bad;
	pthread_t sender, receiver;
};

static int64_t t0_ns, interval_ns, end_ns, window_start_ns, window_end_ns;
static long size = 1472;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_until(int64_t abs_ns)
{
	struct timespec ts = { .tv_sec = abs_ns / 1000000000, .tv_nsec = abs_ns % 1000000000 };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void die(const char *what)
{
	fprintf(stderr, "farm_load: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double number(const char *opt, const char *text, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (errno || *text == '\0' || *end != '\0' || !isfinite(v) || v < lo || v > hi) {
		fprintf(stderr, "farm_load: %s %s: expected a number %g-%g\n", opt, text, lo, hi);
		exit(2);
	}
	return v;
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void *send_loop(void *arg)
{
	struct client *c = arg;
	unsigned char *buf = calloc(1, (size_t)size);
	long seq;

	if (!buf)
		die("calloc");
	put64(buf, MAGIC | ((uint64_t)c->id << 32));
	for (seq = 0; seq < c->total; seq++) {
		int64_t due = t0_ns + c->offset_ns + seq * interval_ns, t;
		if (now_ns() < due)
			sleep_until(due); /* overdue packets go at once: the average rate is kept */
		t = now_ns() - t0_ns;
		put64(buf + 8, (uint64_t)seq);
		put64(buf + 16, (uint64_t)t);
		/* before the send: on loopback the reply can be back before send() returns */
		__atomic_store_n(&c->tx[seq], t, __ATOMIC_RELEASE);
		if (send(c->fd, buf, (size_t)size, 0) == size) {
			c->sent++;
		} else {
			__atomic_store_n(&c->tx[seq], -1, __ATOMIC_RELEASE);
			c->send_errors++; /* e.g. ECONNREFUSED after an ICMP port unreachable */
		}
	}
	free(buf);
	return NULL;
}

static void *receive_loop(void *arg)
{
	struct client *c = arg;
	unsigned char *buf = malloc(65536);

	if (!buf)
		die("malloc");
	for (;;) {
		ssize_t n = recv(c->fd, buf, 65536, 0);
		int64_t t = now_ns();
		if (t >= end_ns)
			break; /* replies after the load ended are not samples */
		if (n < 0)
			continue; /* SO_RCVTIMEO, or an ICMP error from the last send */
		if (n != size || get64(buf) != (MAGIC | ((uint64_t)c->id << 32))) {
			c->bad++;
			continue;
		}
		uint64_t seq = get64(buf + 8);
		if (seq >= (uint64_t)c->total || __atomic_load_n(&c->tx[seq], __ATOMIC_ACQUIRE) != (int64_t)get64(buf + 16)) {
			c->bad++;
			continue;
		}
		if (c->rx[seq] >= 0) {
			c->duplicates++;
			continue;
		}
		c->rx[seq] = t - t0_ns;
		c->received++;
	}
	free(buf);
	return NULL;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static double sec(int64_t ns) { return (double)ns / 1e9; }

/* --- -m ipbench: ipbench's latency client ---------------------------------------------------------
 *
 * What ipbench's latency test does in each client (au-ts/ipbench ipbench2/src/tests/latency/latency.c,
 * measure_latency), done here for each of N clients, each with its own connected non-blocking UDP
 * socket (kernel default buffers, as ipbench's) and its own share RATE/N (integer bit/s, as the lab's
 * script divides it) of the load:
 *   every turn of a busy loop: read the clock (before recv); past the end, stop; once the client has
 *   SAMPLES/N samples (or the time-out has passed since its warm-up ended), its cool-down begins;
 *   take at most one reply (non-blocking recv): its send time is looked up by sequence number in a
 *   ring of one second's worth of packets (x drop); a reply found there while the window is open
 *   (after the warm-up, before the cool-down) is a sample, RTT = this turn's clock - its send time;
 *   one not found there (older than the ring) is late; then, if fewer packets were sent than
 *   (now - start) x rate, send one (its send time: this turn's clock).
 * The figures (latency_output, printed by the controller): per client, achieved = 8 x samples x size
 * x 10^6 / window_us and sent = 8 x window sends x size x 10^6 / window_us (integer division, window_us
 * the client's own window, cool-down start - warm-up end, truncated to µs), summed over clients; RTT
 * samples truncated to µs; min, max; avg = sum / n and stdev = sqrt(sum((avg - x)^2) / n) with
 * integer division; median = sorted[n/2]. Clients are spread over THREADS threads (-j, default one
 * per core but one, at most one per client), each busy-polling its clients in turn.
 */

struct slot {
	uint64_t id; /* packet id + 1; 0: empty */
	int64_t tx;
};

struct ipclient {
	int id, fd;
	uint64_t bps, samples, list_len, head, sid, sends;
	double per_ns; /* packets per ns at this client's rate */
	int64_t start, warm_end, cool_start, end;
	struct slot *list;
	uint64_t sent_packets, received_packets, recvs, late, dropped, bad;
	uint64_t send_eagain, recv_eagain, send_errors, recv_errors;
	int timed_out, done;
	int64_t *rtt, *rx;
	uint64_t *seq;
	unsigned char *sbuf, *rbuf;
};

static struct ipclient ipc[MAX_CLIENTS];
static long ip_clients, ip_threads;
static int64_t ip_cooldown_ns, ip_timeout_ns;

/* ipbench's packet_list_add: returns 1 when the slot held a packet that never came back (a drop) */
static uint64_t ip_list_add(struct ipclient *c, uint64_t id, int64_t tx)
{
	c->head = (c->head + 1) % c->list_len;
	uint64_t drops = c->list[c->head].id != 0;
	c->list[c->head].id = id + 1;
	c->list[c->head].tx = tx;
	return drops;
}

/* ipbench's packet_list_del: the send time of packet id, 0 when it is older than the ring */
static int64_t ip_list_del(struct ipclient *c, uint64_t id)
{
	uint64_t offset = c->list[c->head].id - (id + 1), index;
	if (offset >= c->list_len)
		return 0;
	index = c->head >= offset ? c->head - offset : c->list_len - (offset - c->head);
	if (c->list[index].id != id + 1)
		return 0;
	int64_t tx = c->list[index].tx;
	c->list[index].id = 0;
	c->list[index].tx = 0;
	return tx;
}

static void ip_turn(struct ipclient *c)
{
	int64_t now = now_ns();
	if (c->end && now >= c->end) {
		__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
		return;
	}
	if (now < c->start)
		return; /* not started yet (clients are staggered by 1/N of a packet interval) */
	uint64_t predicted = (uint64_t)((double)(now - c->start) * c->per_ns);
	if (c->cool_start == 0 && (c->received_packets >= c->samples ||
				   (ip_timeout_ns && now >= c->warm_end + ip_timeout_ns))) {
		c->timed_out = c->received_packets < c->samples;
		c->end = now + ip_cooldown_ns;
		__atomic_store_n(&c->cool_start, now, __ATOMIC_RELEASE);
	}
	ssize_t r = recv(c->fd, c->rbuf, (size_t)size, 0);
	if (r >= 0) {
		if (r != size || get64(c->rbuf) != (MAGIC | ((uint64_t)c->id << 32))) {
			c->bad++;
		} else {
			uint64_t id = get64(c->rbuf + 8);
			int64_t tx = ip_list_del(c, id);
			if (now >= c->warm_end && c->cool_start == 0) {
				if (tx > 0) {
					c->rtt[c->received_packets] = now - tx;
					c->rx[c->received_packets] = now;
					c->seq[c->received_packets] = id;
					c->received_packets++;
				} else {
					c->late++;
				}
			}
			c->recvs++;
		}
	} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
		c->recv_eagain++;
	} else {
		c->recv_errors++; /* e.g. ECONNREFUSED after an ICMP port unreachable */
	}
	if (predicted > c->sends) {
		put64(c->sbuf + 8, c->sid);
		put64(c->sbuf + 16, (uint64_t)now);
		ssize_t s = send(c->fd, c->sbuf, (size_t)size, 0);
		if (s == size) {
			uint64_t drops = ip_list_add(c, c->sid, now);
			c->sid++;
			if (now >= c->warm_end && c->cool_start == 0) {
				c->dropped += drops;
				c->sent_packets++;
			}
			c->sends++;
		} else if (s < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			c->send_eagain++; /* the same packet again next turn, as ipbench */
		} else {
			c->send_errors++; /* ipbench asserts here; counted, and the packet skipped */
			c->sid++;
			c->sends++;
		}
	}
}

static void *ip_thread(void *arg)
{
	long t = (long)arg;
	for (;;) {
		int busy = 0;
		for (long k = t; k < ip_clients; k += ip_threads) {
			if (!__atomic_load_n(&ipc[k].done, __ATOMIC_ACQUIRE)) {
				ip_turn(&ipc[k]);
				busy = 1;
			}
		}
		if (!busy)
			return NULL;
	}
}

static int cmpu64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int run_ipbench(const char *host, struct addrinfo *ai, long port, double rate, long clients, long threads,
		       double warmup, double cooldown, long samples, double timeout, long drop, const char *dump)
{
	long per_client = samples / clients;
	uint64_t bps = (uint64_t)rate / (uint64_t)clients;
	if (per_client < 1) {
		fprintf(stderr, "farm_load: -N %ld: fewer samples than clients (%ld)\n", samples, clients);
		return 2;
	}
	if (threads <= 0) {
		long cores = sysconf(_SC_NPROCESSORS_ONLN);
		threads = cores > 1 ? cores - 1 : 1;
	}
	if (threads > clients)
		threads = clients;
	ip_clients = clients;
	ip_threads = threads;
	ip_cooldown_ns = (int64_t)llround(cooldown * 1e9);
	ip_timeout_ns = (int64_t)llround(timeout * 1e9);
	int64_t interval = (int64_t)llround((double)size * 8 * 1e9 / (double)bps);
	int64_t t0 = now_ns() + 50000000; /* 50 ms to start the threads */
	for (long k = 0; k < clients; k++) {
		struct ipclient *c = &ipc[k];
		c->id = (int)k;
		c->bps = bps;
		c->samples = (uint64_t)per_client;
		c->per_ns = (double)bps / (8.0 * 1e9 * (double)size);
		c->list_len = (bps / 8) / (uint64_t)size;
		if (c->list_len < 1)
			c->list_len = 1;
		c->list_len *= (uint64_t)drop;
		c->list = calloc(c->list_len, sizeof(struct slot));
		c->rtt = malloc(sizeof(int64_t) * (size_t)per_client);
		c->rx = malloc(sizeof(int64_t) * (size_t)per_client);
		c->seq = malloc(sizeof(uint64_t) * (size_t)per_client);
		c->sbuf = calloc(1, (size_t)size);
		c->rbuf = malloc(65536);
		if (!c->list || !c->rtt || !c->rx || !c->seq || !c->sbuf || !c->rbuf)
			die("malloc");
		put64(c->sbuf, MAGIC | ((uint64_t)k << 32));
		c->fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (c->fd < 0)
			die("socket");
		if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) != 0)
			die("connect");
		fcntl(c->fd, F_SETFL, O_NONBLOCK);
		c->start = t0 + interval * k / clients;
		c->warm_end = c->start + (int64_t)llround(warmup * 1e9);
	}
	printf("farm_load 1 mode=ipbench host=%s port=%ld clients=%ld threads=%ld size=%ld requested=%llu warmup=%g "
	       "cooldown=%g samples=%ld per_client=%ld timeout=%g drop=%ld\n", host, port, clients, threads, size,
	       (unsigned long long)(bps * (uint64_t)clients), warmup, cooldown, samples, per_client, timeout, drop);
	fflush(stdout);
	pthread_t th[MAX_CLIENTS];
	for (long t = 0; t < threads; t++)
		if (pthread_create(&th[t], NULL, ip_thread, (void *)t) != 0)
			die("pthread_create");
	int64_t open_at = 0;
	for (long k = 0; k < clients; k++)
		if (ipc[k].warm_end > open_at)
			open_at = ipc[k].warm_end;
	sleep_until(open_at);
	printf("window_start t=%.6f\n", sec(now_ns() - t0));
	fflush(stdout);
	for (long k = 0; k < clients; k++)
		while (__atomic_load_n(&ipc[k].cool_start, __ATOMIC_ACQUIRE) == 0)
			sleep_until(now_ns() + 1000000);
	printf("window_end t=%.6f\n", sec(now_ns() - t0));
	fflush(stdout);
	for (long t = 0; t < threads; t++)
		pthread_join(th[t], NULL);

	FILE *out = NULL;
	if (dump && !(out = fopen(dump, "w")))
		die(dump);
	uint64_t n = 0, achieved = 0, sent = 0, late = 0, dropped = 0, timeouts = 0;
	int64_t first_tx = -1, last_rx = -1, wstart = -1, wend = -1, load_end = 0;
	for (long k = 0; k < clients; k++)
		n += ipc[k].received_packets;
	uint64_t *us = malloc(sizeof(uint64_t) * (size_t)(n ? n : 1)), i = 0;
	if (!us)
		die("malloc");
	for (long k = 0; k < clients; k++) {
		struct ipclient *c = &ipc[k];
		uint64_t window_us = (uint64_t)(c->cool_start - c->warm_end) / 1000;
		uint64_t bps_rx = window_us ? 8 * c->received_packets * (uint64_t)size * 1000000 / window_us : 0;
		uint64_t bps_tx = window_us ? 8 * c->sent_packets * (uint64_t)size * 1000000 / window_us : 0;
		achieved += bps_rx;
		sent += bps_tx;
		late += c->late;
		dropped += c->dropped;
		timeouts += (uint64_t)c->timed_out;
		if (wstart < 0 || c->warm_end - t0 < wstart)
			wstart = c->warm_end - t0;
		if (c->cool_start - t0 > wend)
			wend = c->cool_start - t0;
		if (c->end - t0 > load_end)
			load_end = c->end - t0;
		for (uint64_t j = 0; j < c->received_packets; j++) {
			int64_t tx = c->rx[j] - c->rtt[j];
			us[i++] = (uint64_t)c->rtt[j] / 1000;
			if (first_tx < 0 || tx - t0 < first_tx)
				first_tx = tx - t0;
			if (c->rx[j] - t0 > last_rx)
				last_rx = c->rx[j] - t0;
			if (out)
				fprintf(out, "%ld %llu %.9f %.9f\n", k, (unsigned long long)c->seq[j], sec(tx - t0),
					sec(c->rx[j] - t0));
		}
		printf("client %ld sent=%llu window_sent=%llu received=%llu samples=%llu duplicates=0 send_errors=%llu "
		       "bad=%llu late=%llu dropped=%llu window_us=%llu window_start=%.9f window_end=%.9f timed_out=%d "
		       "send_eagain=%llu recv_eagain=%llu recv_errors=%llu achieved=%llu sent_bps=%llu\n",
		       k, (unsigned long long)c->sends, (unsigned long long)c->sent_packets,
		       (unsigned long long)c->recvs, (unsigned long long)c->received_packets,
		       (unsigned long long)c->send_errors, (unsigned long long)c->bad, (unsigned long long)c->late,
		       (unsigned long long)c->dropped, (unsigned long long)window_us, sec(c->warm_end - t0),
		       sec(c->cool_start - t0), c->timed_out, (unsigned long long)c->send_eagain,
		       (unsigned long long)c->recv_eagain, (unsigned long long)c->recv_errors,
		       (unsigned long long)bps_rx, (unsigned long long)bps_tx);
	}
	if (out && fclose(out) != 0)
		die(dump);
	uint64_t mn = 0, mx = 0, avg = 0, dev = 0, med = 0, p10 = 0, p90 = 0;
	if (n > 0) {
		uint64_t total = 0;
		qsort(us, (size_t)n, sizeof(uint64_t), cmpu64);
		for (i = 0; i < n; i++)
			total += us[i];
		avg = total / n;
		for (i = 0; i < n; i++) {
			uint64_t d = avg - us[i]; /* ipbench's unsigned arithmetic: the square is the same */
			dev += d * d;
		}
		dev /= n;
		mn = us[0];
		mx = us[n - 1];
		med = us[n / 2];
		p10 = us[(uint64_t)((double)n * 0.1)];
		p90 = us[(uint64_t)((double)n * 0.9)];
	}
	printf("result requested=%llu send=%llu receive=%llu size=%ld n=%llu min=%llu avg=%llu max=%llu stdev=%.2f "
	       "median=%llu window_start=%.9f window_end=%.9f load_end=%.9f first_tx=%.9f last_rx=%.9f lost=%llu "
	       "late=%llu timeouts=%llu p10=%llu p90=%llu\n",
	       (unsigned long long)(bps * (uint64_t)clients), (unsigned long long)sent, (unsigned long long)achieved, size,
	       (unsigned long long)n, (unsigned long long)mn, (unsigned long long)avg, (unsigned long long)mx,
	       sqrt((double)dev), (unsigned long long)med, sec(wstart), sec(wend), sec(load_end),
	       n ? sec(first_tx) : 0.0, n ? sec(last_rx) : 0.0, (unsigned long long)dropped, (unsigned long long)late,
	       (unsigned long long)timeouts, (unsigned long long)p10, (unsigned long long)p90);
	return 0;
}

int main(int argc, char **argv)
{
	const char *host = NULL, *dump = NULL;
	long port = 7, clients = 4, samples = 0, slack_us = 50, threads = 0, drop = 1;
	double rate = 0, warmup = 1, cooldown = 1, duration = 0, timeout = 0;
	int opt, ipbench = 0;

	while ((opt = getopt(argc, argv, "a:p:r:s:n:w:c:d:N:o:S:m:T:j:D:")) != -1) {
		switch (opt) {
		case 'a': host = optarg; break;
		case 'p': port = (long)number("-p", optarg, 1, 65535); break;
		case 'r': rate = number("-r", optarg, 1000, 1e11); break;
		case 's': size = (long)number("-s", optarg, HEADER, 65507); break;
		case 'n': clients = (long)number("-n", optarg, 1, MAX_CLIENTS); break;
		case 'w': warmup = number("-w", optarg, 0, 3600); break;
		case 'c': cooldown = number("-c", optarg, 0, 3600); break;
		case 'd': duration = number("-d", optarg, 0.001, 3600); break;
		case 'N': samples = (long)number("-N", optarg, 1, 1e9); break;
		case 'o': dump = optarg; break;
		case 'S': slack_us = (long)number("-S", optarg, 1, 10000); break;
		case 'm':
			if (strcmp(optarg, "ipbench") == 0)
				ipbench = 1;
			else if (strcmp(optarg, "paced") != 0)
				goto usage;
			break;
		case 'T': timeout = number("-T", optarg, 0, 86400); break;
		case 'j': threads = (long)number("-j", optarg, 1, MAX_CLIENTS); break;
		case 'D': drop = (long)number("-D", optarg, 1, 1000); break;
		default: goto usage;
		}
	}
	if (!host || rate <= 0 || (duration > 0) == (samples > 0) || optind != argc || (ipbench && duration > 0)) {
usage:
		fprintf(stderr, "usage: farm_load -a HOST [-p PORT] -r BIT/S [-s SIZE] [-n CLIENTS] [-w WARMUP_S]"
			" [-c COOLDOWN_S] (-d DURATION_S | -N SAMPLES) [-o SAMPLES_FILE] [-S SLACK_US]\n"
			"       farm_load -m ipbench -a HOST [-p PORT] -r BIT/S [-s SIZE] [-n CLIENTS] [-w WARMUP_S]"
			" [-c COOLDOWN_S] -N SAMPLES [-T TIMEOUT_S] [-j THREADS] [-D DROP] [-o SAMPLES_FILE]\n");
		return 2;
	}

	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_DGRAM }, *ai;
	char portname[16];
	snprintf(portname, sizeof(portname), "%ld", port);
	if (getaddrinfo(host, portname, &hints, &ai) != 0) {
		fprintf(stderr, "farm_load: -a %s: not an IPv4 host\n", host);
		return 2;
	}
	if (ipbench)
		return run_ipbench(host, ai, port, rate, clients, threads, warmup, cooldown, samples, timeout, drop, dump);

	/* per client: RATE/N bit/s of SIZE-byte payloads */
	interval_ns = (int64_t)llround((double)size * 8 * (double)clients * 1e9 / rate);
	if (interval_ns < 1)
		interval_ns = 1;
	long warm = (long)ceil(warmup * 1e9 / (double)interval_ns);
	long window = samples ? (samples + clients - 1) / clients : (long)llround(duration * 1e9 / (double)interval_ns);
	long cool = (long)ceil(cooldown * 1e9 / (double)interval_ns);
	if (window < 1)
		window = 1;
	long total = warm + window + cool;
	if (total * clients > MAX_PACKETS) {
		fprintf(stderr, "farm_load: %ld packets to send: more than %ld, shorten the run\n", total * clients, MAX_PACKETS);
		return 2;
	}
	prctl(PR_SET_TIMERSLACK, (unsigned long)slack_us * 1000UL, 0, 0, 0); /* inherited by the threads */

	static struct client cs[MAX_CLIENTS];
	for (int k = 0; k < clients; k++) {
		struct client *c = &cs[k];
		struct timeval tv = { .tv_sec = 0, .tv_usec = 10000 };
		int bufsize = 4 << 20;
		c->id = k;
		c->total = total;
		c->warm = warm;
		c->window = window;
		c->offset_ns = interval_ns * k / clients;
		c->tx = malloc(sizeof(int64_t) * (size_t)total);
		c->rx = malloc(sizeof(int64_t) * (size_t)total);
		if (!c->tx || !c->rx)
			die("malloc");
		memset(c->tx, 0xff, sizeof(int64_t) * (size_t)total); /* -1 */
		memset(c->rx, 0xff, sizeof(int64_t) * (size_t)total);
		c->fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (c->fd < 0)
			die("socket");
		setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof(bufsize));
		setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof(bufsize));
		setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) != 0)
			die("connect");
	}
	freeaddrinfo(ai);

	t0_ns = now_ns() + 50000000; /* 50 ms to start the threads */
	window_start_ns = warm * interval_ns;
	window_end_ns = (warm + window) * interval_ns;
	end_ns = t0_ns + (total - 1) * interval_ns + interval_ns; /* the last packet's slot ends the load */
	printf("farm_load 1 host=%s port=%ld clients=%ld size=%ld requested=%.0f warmup=%g duration=%g cooldown=%g "
	       "samples=%ld\n", host, port, clients, size, rate, warmup, samples ? sec(window * interval_ns) : duration,
	       cooldown, samples);
	fflush(stdout);
	for (int k = 0; k < clients; k++) {
		if (pthread_create(&cs[k].receiver, NULL, receive_loop, &cs[k]) != 0 ||
		    pthread_create(&cs[k].sender, NULL, send_loop, &cs[k]) != 0)
			die("pthread_create");
	}
	sleep_until(t0_ns + window_start_ns);
	printf("window_start t=%.6f\n", sec(now_ns() - t0_ns));
	fflush(stdout);
	sleep_until(t0_ns + window_end_ns);
	printf("window_end t=%.6f\n", sec(now_ns() - t0_ns));
	fflush(stdout);
	for (int k = 0; k < clients; k++) {
		pthread_join(cs[k].sender, NULL);
		pthread_join(cs[k].receiver, NULL);
	}

	/* the window, by send and receive times: [window_start, window_end) */
	FILE *out = NULL;
	if (dump && !(out = fopen(dump, "w")))
		die(dump);
	int64_t *rtts = malloc(sizeof(int64_t) * (size_t)(total * clients));
	long n = 0, window_sent = 0, window_received = 0;
	int64_t first_tx = -1, last_rx = -1;
	if (!rtts)
		die("malloc");
	for (int k = 0; k < clients; k++) {
		struct client *c = &cs[k];
		long csent = 0, csamples = 0;
		for (long i = 0; i < total; i++) {
			int64_t tx = c->tx[i], rx = c->rx[i];
			if (rx >= window_start_ns && rx < window_end_ns)
				window_received++;
			if (tx < window_start_ns || tx >= window_end_ns)
				continue;
			csent++;
			if (rx < 0)
				continue;
			rtts[n++] = rx - tx;
			csamples++;
			if (first_tx < 0 || tx < first_tx)
				first_tx = tx;
			if (rx > last_rx)
				last_rx = rx;
			if (out)
				fprintf(out, "%d %ld %.9f %.9f\n", k, i, sec(tx), sec(rx));
		}
		window_sent += csent;
		printf("client %d sent=%ld window_sent=%ld received=%ld samples=%ld duplicates=%ld send_errors=%ld bad=%ld\n",
		       k, c->sent, csent, c->received, csamples, c->duplicates, c->send_errors, c->bad);
	}
	if (out && fclose(out) != 0)
		die(dump);
	double length = sec(window_end_ns - window_start_ns), bits = (double)size * 8;
	double mn = 0, mx = 0, avg = 0, sd = 0, med = 0, p10 = 0, p90 = 0;
	if (n > 0) {
		double sum = 0, sq = 0;
		qsort(rtts, (size_t)n, sizeof(int64_t), cmp64);
		for (long i = 0; i < n; i++)
			sum += (double)rtts[i];
		avg = sum / (double)n;
		for (long i = 0; i < n; i++)
			sq += ((double)rtts[i] - avg) * ((double)rtts[i] - avg);
		sd = sqrt(sq / (double)n) / 1e3; /* population, as ipbench */
		avg /= 1e3;
		mn = (double)rtts[0] / 1e3;
		mx = (double)rtts[n - 1] / 1e3;
		med = (double)rtts[n / 2] / 1e3; /* the upper middle sample, as ipbench */
		p10 = (double)rtts[(long)((double)n * 0.1)] / 1e3;
		p90 = (double)rtts[(long)((double)n * 0.9)] / 1e3;
	}
	printf("result requested=%.0f send=%.0f receive=%.0f size=%ld n=%ld min=%.3f avg=%.3f max=%.3f stdev=%.3f "
	       "median=%.3f window_start=%.9f window_end=%.9f load_end=%.9f first_tx=%.9f last_rx=%.9f lost=%ld "
	       "p10=%.3f p90=%.3f\n",
	       rate, (double)window_sent * bits / length, (double)window_received * bits / length, size, n, mn, avg, mx, sd,
	       med, sec(window_start_ns), sec(window_end_ns), sec(end_ns - t0_ns), n ? sec(first_tx) : 0.0,
	       n ? sec(last_rx) : 0.0, window_sent - n, p10, p90);
	return 0;
}
