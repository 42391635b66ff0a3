/* farm_echo: the target's UDP echo responder for farm's ipbench-style load test.
 *
 * Every datagram that arrives on the port is sent back, unchanged, to where it came from (so it
 * works through a NAT or QEMU's user-mode port forward). By default it takes up to 64 datagrams per
 * recvmmsg and answers them with sendmmsg (farm's faster responder, method ipbench-echo); with -s it
 * answers one datagram per recvfrom/sendto into a buffer of the kernel's default size, as ipbench's
 * UDP echo responder does (method ipbench). Options:
 *   -p PORT   UDP port (default 7)
 *   -s        one datagram per recvfrom/sendto (ipbench's echo responder)
 *   -P PRIO   run with SCHED_FIFO priority PRIO (1-99); default: the normal scheduler
 *   -c CPU    pin to core CPU (sched_setaffinity); default: any core
 *   -d        daemonize after the socket is bound (the shell command returns at once)
 *   -b BYTES  socket receive/send buffer size (default 4 MiB, as far as the kernel allows; with -s
 *             the kernel's default unless given)
 * It prints "farm_echo: port P pid N" once bound and listening, then nothing; errors go to stderr
 * with exit status 1 (2 for a bad option).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#define BATCH 64
#define MAXLEN 65536

static long number(const char *opt, const char *text, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || *text == '\0' || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "farm_echo: %s %s: expected a whole number %ld-%ld\n", opt, text, lo, hi);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long port = 7, prio = 0, cpu = -1, bufsize = -1;
	int daemonize = 0, single = 0, opt, fd, i;
	struct sockaddr_in addr;
	static char bufs[BATCH][MAXLEN];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in peers[BATCH];

	while ((opt = getopt(argc, argv, "p:P:c:db:s")) != -1) {
		switch (opt) {
		case 'p': port = number("-p", optarg, 1, 65535); break;
		case 's': single = 1; break;
		case 'P': prio = number("-P", optarg, 1, 99); break;
		case 'c': cpu = number("-c", optarg, 0, CPU_SETSIZE - 1); break;
		case 'd': daemonize = 1; break;
		case 'b': bufsize = number("-b", optarg, 4096, 1 << 30); break;
		default:
			fprintf(stderr, "usage: farm_echo [-p PORT] [-s] [-P FIFO_PRIO] [-c CPU] [-b BYTES] [-d]\n");
			return 2;
		}
	}
	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) != 0) {
			fprintf(stderr, "farm_echo: -c %ld: sched_setaffinity: %s\n", cpu, strerror(errno));
			return 1;
		}
	}
	if (prio > 0) {
		struct sched_param sp = { .sched_priority = (int)prio };
		if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
			fprintf(stderr, "farm_echo: -P %ld: sched_setscheduler(SCHED_FIFO): %s\n", prio, strerror(errno));
			return 1;
		}
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		fprintf(stderr, "farm_echo: socket: %s\n", strerror(errno));
		return 1;
	}
	if (bufsize < 0 && !single)
		bufsize = 4 << 20;
	if (bufsize > 0) {
		int size = (int)bufsize;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)); /* best effort: capped by rmem_max */
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	}
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = htons((unsigned short)port);
	addr.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		fprintf(stderr, "farm_echo: bind port %ld: %s\n", port, strerror(errno));
		return 1;
	}
	if (daemonize) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "farm_echo: fork: %s\n", strerror(errno));
			return 1;
		}
		if (pid > 0) {
			printf("farm_echo: port %ld pid %d\n", port, (int)pid);
			return 0;
		}
		setsid();
		freopen("/dev/null", "r", stdin);
		freopen("/dev/null", "w", stdout);
		freopen("/dev/null", "w", stderr);
	} else {
		printf("farm_echo: port %ld pid %d\n", port, (int)getpid());
		fflush(stdout);
	}
	while (single) {
		/* ipbench's echo: block in recvfrom for one datagram, send it back with sendto */
		struct sockaddr_in peer;
		socklen_t peerlen = sizeof(peer);
		ssize_t n = recvfrom(fd, bufs[0], MAXLEN, 0, (struct sockaddr *)&peer, &peerlen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "farm_echo: recvfrom: %s\n", strerror(errno));
			return 1;
		}
		while (sendto(fd, bufs[0], (size_t)n, 0, (struct sockaddr *)&peer, peerlen) < 0 && errno == EINTR)
			;
	}
	for (;;) {
		int n;
		for (i = 0; i < BATCH; i++) {
			iov[i].iov_base = bufs[i];
			iov[i].iov_len = MAXLEN;
			memset(&msgs[i].msg_hdr, 0, sizeof(msgs[i].msg_hdr));
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
			msgs[i].msg_hdr.msg_name = &peers[i];
			msgs[i].msg_hdr.msg_namelen = sizeof(peers[i]);
		}
		/* block for the first datagram, then take whatever else is queued */
		n = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "farm_echo: recvmmsg: %s\n", strerror(errno));
			return 1;
		}
		for (i = 0; i < n; i++)
			iov[i].iov_len = msgs[i].msg_len;
		for (i = 0; i < n;) {
			int sent = sendmmsg(fd, msgs + i, (unsigned)(n - i), 0);
			if (sent <= 0) {
				if (sent < 0 && errno == EINTR)
					continue;
				break; /* a full send queue drops the rest, as a busy router would */
			}
			i += sent;
		}
	}
}
