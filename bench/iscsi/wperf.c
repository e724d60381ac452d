/* iscsi-wperf: keep QD random WRITE(10)s of BLOCKS blocks in flight against
 * one LUN for SECONDS and print the IOPS; libiscsi's iscsi-perf only reads.
 * Both targets of bench/iscsi/run.py face this same client.
 *
 *   cc -O2 -o wperf wperf.c -liscsi        (apt-get install libiscsi-dev)
 *   wperf [-m QD] [-b BLOCKS] [-t SECONDS] iscsi://HOST[:PORT]/IQN/LUN
 *
 * Prints "iops N" (completed writes / elapsed seconds) and exits 0; exits 1
 * on a login failure or a write that does not complete GOOD.
 */
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

struct state {
	struct iscsi_context *iscsi;
	int lun;
	uint32_t blocks, block_size;
	uint64_t lbas; /* valid starting LBAs */
	uint64_t rng;
	unsigned char *buf;
	int in_flight, stopping, failed;
	uint64_t done;
};

static uint64_t next_random(struct state *s)
{
	/* xorshift64*: cheap and good enough to spread the LBAs. */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 2685821657736338717ULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void submit(struct state *s);

static void written(struct iscsi_context *iscsi, int status, void *command_data, void *private_data)
{
	struct state *s = private_data;
	struct scsi_task *task = command_data;
	(void)iscsi;
	s->in_flight--;
	if (status != SCSI_STATUS_GOOD) {
		fprintf(stderr, "wperf: WRITE(10) failed: status %d: %s\n", status, iscsi_get_error(s->iscsi));
		s->failed = 1;
	} else {
		s->done++;
	}
	if (task)
		scsi_free_scsi_task(task);
	if (!s->stopping && !s->failed)
		submit(s);
}

static void submit(struct state *s)
{
	uint32_t lba = (uint32_t)(next_random(s) % s->lbas);
	/* The same buffer for every write: the data does not matter here. */
	if (iscsi_write10_task(s->iscsi, s->lun, lba, s->buf, s->blocks * s->block_size, s->block_size,
			       0, 0, 0, 0, 0, written, s) == NULL) {
		fprintf(stderr, "wperf: cannot queue WRITE(10): %s\n", iscsi_get_error(s->iscsi));
		s->failed = 1;
		return;
	}
	s->in_flight++;
}

static int service(struct state *s, int timeout_ms)
{
	struct pollfd pfd = { .fd = iscsi_get_fd(s->iscsi), .events = iscsi_which_events(s->iscsi) };
	if (poll(&pfd, 1, timeout_ms) < 0)
		return -1;
	if (iscsi_service(s->iscsi, pfd.revents) < 0) {
		fprintf(stderr, "wperf: %s\n", iscsi_get_error(s->iscsi));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int qd = 32, seconds = 6, opt;
	uint32_t blocks = 8;
	while ((opt = getopt(argc, argv, "m:b:t:")) != -1) {
		switch (opt) {
		case 'm': qd = atoi(optarg); break;
		case 'b': blocks = (uint32_t)atoi(optarg); break;
		case 't': seconds = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: wperf [-m QD] [-b BLOCKS] [-t SECONDS] URL\n");
			return 2;
		}
	}
	if (optind != argc - 1 || qd < 1 || blocks < 1 || seconds < 1) {
		fprintf(stderr, "usage: wperf [-m QD] [-b BLOCKS] [-t SECONDS] URL\n");
		return 2;
	}
	struct state s = { .blocks = blocks, .rng = 0x9E3779B97F4A7C15ULL ^ (uint64_t)getpid() };
	s.iscsi = iscsi_create_context("iqn.2024-01.org.netcfg.bench:wperf");
	struct iscsi_url *url = iscsi_parse_full_url(s.iscsi, argv[optind]);
	if (!url) {
		fprintf(stderr, "wperf: bad URL: %s\n", iscsi_get_error(s.iscsi));
		return 1;
	}
	iscsi_set_targetname(s.iscsi, url->target);
	iscsi_set_session_type(s.iscsi, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(s.iscsi, ISCSI_HEADER_DIGEST_NONE);
	if (iscsi_full_connect_sync(s.iscsi, url->portal, url->lun) != 0) {
		fprintf(stderr, "wperf: login failed: %s\n", iscsi_get_error(s.iscsi));
		return 1;
	}
	s.lun = url->lun;
	struct scsi_task *task = iscsi_readcapacity16_sync(s.iscsi, s.lun);
	struct scsi_readcapacity16 *rc16 = task && task->status == SCSI_STATUS_GOOD ? scsi_datain_unmarshall(task) : NULL;
	if (!rc16) {
		fprintf(stderr, "wperf: READ CAPACITY(16) failed: %s\n", iscsi_get_error(s.iscsi));
		return 1;
	}
	s.block_size = rc16->block_length;
	if (rc16->returned_lba + 1 <= blocks) {
		fprintf(stderr, "wperf: the LUN is smaller than one write\n");
		return 1;
	}
	s.lbas = rc16->returned_lba + 1 - blocks;
	if (s.lbas > UINT32_MAX)
		s.lbas = UINT32_MAX; /* WRITE(10) addresses 2^32 blocks */
	scsi_free_scsi_task(task);
	s.buf = malloc((size_t)blocks * s.block_size);
	memset(s.buf, 0xA5, (size_t)blocks * s.block_size);

	double start = now(), end = start + seconds;
	for (int i = 0; i < qd; i++)
		submit(&s);
	while (!s.failed && now() < end)
		if (service(&s, 100) < 0)
			return 1;
	double elapsed = now() - start;
	uint64_t done = s.done;
	s.stopping = 1;
	while (s.in_flight > 0 && !s.failed)
		if (service(&s, 1000) < 0)
			return 1;
	if (s.failed)
		return 1;
	printf("iops %.0f\n", done / elapsed);
	iscsi_logout_sync(s.iscsi);
	iscsi_destroy_url(url);
	iscsi_destroy_context(s.iscsi);
	free(s.buf);
	return 0;
}
