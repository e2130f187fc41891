/* The guest-side workloads of oracle/qemu/run.sh (seed 003), as one static
 * program with no dependencies (the initramfs has only busybox):
 *
 *   mixpress aging FILE ANON_MB THREADS READERS ROUNDS PAUSE_MS WAIT_MS LIMIT_S
 *     Seed 003's aging OOM reproducer, written from its description: READERS
 *     processes (each its own mm) mmap FILE and read one byte of every page,
 *     pausing PAUSE_MS after each pass; once all have done one pass, a
 *     pressure process runs ROUNDS rounds of: map ANON_MB anonymous, fault it
 *     for write from THREADS threads, unmap, sleep WAIT_MS. The pressure is
 *     a child process so that an OOM kill of it ends the run and is seen.
 *     The parent survives the OOM killer (oom_score_adj -1000) and gives up
 *     after LIMIT_S seconds (a livelock is a result too).
 *
 *   mixpress swapmix FILE ANON_MB SECONDS ANON_THINK_US FILE_THINK_US
 *     The swappiness sweep's anon + file mix (examples/swappiness-mix.toml):
 *     one process writes ANON_MB of poorly compressible anon memory, another
 *     reads FILE through read(2) in 64 KiB blocks; then for SECONDS both
 *     access their data with the same zipf(0.9) skew, 4 KiB at a time.
 *
 *   mixpress ycsb FILE ANON_MB THREADS SECONDS READ_KB CPU_US
 *     Seed 003's MongoDB + YCSB workloadb proxy without its writes
 *     (examples/seed003-mongodb-ycsb.toml's read side): one process fills
 *     ANON_MB of anonymous memory (the WiredTiger cache), then THREADS
 *     threads run for SECONDS operations of: a load from the cache page and
 *     a READ_KB pread of FILE, both picked with YCSB's scrambled zipfian
 *     (theta 0.99, its 10^10-item zipfian hashed onto the pages or blocks),
 *     then CPU_US of spinning (the query's own work).
 *
 * Each prints one line "RESULT {json}" on stdout. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void sleep_us(long us)
{
	struct timespec t = { us / 1000000, (us % 1000000) * 1000 };
	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

static long arg_long(const char *s, const char *what)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || *end || v < 0) {
		fprintf(stderr, "mixpress: %s: not a non-negative integer: '%s'\n", what, s);
		exit(2);
	}
	return v;
}

/* ---- aging ---- */

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }

static void reader(const char *file, long pause_ms, int ready_fd)
{
	int fd = open(file, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) { perror("reader: open"); _exit(1); }
	size_t size = st.st_size;
	volatile const char *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) { perror("reader: mmap"); _exit(1); }
	close(fd);
	signal(SIGTERM, on_term);
	unsigned sink = 0;
	int first = 1;
	while (!stop) {
		for (size_t off = 0; off < size && !stop; off += PAGE)
			sink += p[off];
		if (first) {
			char c = 1;
			if (write(ready_fd, &c, 1) != 1) _exit(1);
			close(ready_fd);
			first = 0;
		}
		sleep_us(pause_ms * 1000);
	}
	_exit(sink == 0xdeadbeef); /* keeps the loads */
}

struct share { char *base; size_t off, len; };

static void *fault_share(void *arg)
{
	struct share *s = arg;
	for (size_t j = 0; j < s->len; j += PAGE)
		s->base[s->off + j] = (char)j;
	return NULL;
}

/* One round per byte written to done_fd; exits 0 after all rounds. */
static void pressure(size_t anon, int threads, long rounds, long wait_ms, int done_fd)
{
	pthread_t tid[64];
	struct share sh[64];
	size_t per = (anon / threads) & ~(PAGE - 1);
	for (long r = 0; r < rounds; r++) {
		char *base = mmap(NULL, anon, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (base == MAP_FAILED) { perror("pressure: mmap"); _exit(1); }
		for (int i = 0; i < threads; i++) {
			sh[i] = (struct share){ base, i * per, per };
			if (pthread_create(&tid[i], NULL, fault_share, &sh[i])) _exit(1);
		}
		for (int i = 0; i < threads; i++)
			pthread_join(tid[i], NULL);
		munmap(base, anon);
		char c = 1;
		if (write(done_fd, &c, 1) != 1) _exit(1);
		if (r + 1 < rounds)
			sleep_us(wait_ms * 1000);
	}
	_exit(0);
}

static int aging(int argc, char **argv)
{
	if (argc != 10) {
		fprintf(stderr, "usage: mixpress aging FILE ANON_MB THREADS READERS ROUNDS PAUSE_MS WAIT_MS LIMIT_S\n");
		return 2;
	}
	const char *file = argv[2];
	size_t anon = (size_t)arg_long(argv[3], "ANON_MB") << 20;
	int threads = arg_long(argv[4], "THREADS");
	int readers = arg_long(argv[5], "READERS");
	long rounds = arg_long(argv[6], "ROUNDS");
	long pause_ms = arg_long(argv[7], "PAUSE_MS");
	long wait_ms = arg_long(argv[8], "WAIT_MS");
	long limit_s = arg_long(argv[9], "LIMIT_S");
	if (threads < 1 || threads > 64 || readers < 1 || readers > 256) {
		fprintf(stderr, "mixpress: THREADS must be 1..64, READERS 1..256\n");
		return 2;
	}
	FILE *adj = fopen("/proc/self/oom_score_adj", "w");
	if (adj) { fputs("-1000", adj); fclose(adj); }

	pid_t rp[256];
	int ready[2], done[2];
	if (pipe(ready) || pipe(done)) { perror("pipe"); return 1; }
	for (int i = 0; i < readers; i++) {
		rp[i] = fork();
		if (rp[i] == 0) {
			/* The children must be OOM-killable like the reproducer's. */
			FILE *a = fopen("/proc/self/oom_score_adj", "w");
			if (a) { fputs("0", a); fclose(a); }
			close(ready[0]); close(done[0]); close(done[1]);
			reader(file, pause_ms, ready[1]);
		}
	}
	close(ready[1]);
	double t0 = now();
	int warm = 0;
	char buf[256];
	while (warm < readers) {
		ssize_t n = read(ready[0], buf, sizeof(buf));
		if (n <= 0) break;
		warm += n;
	}
	close(ready[0]);
	double t_warm = now() - t0;

	pid_t pp = fork();
	if (pp == 0) {
		FILE *a = fopen("/proc/self/oom_score_adj", "w");
		if (a) { fputs("0", a); fclose(a); }
		close(done[0]);
		pressure(anon, threads, rounds, wait_ms, done[1]);
	}
	close(done[1]);
	long rounds_done = 0;
	int timed_out = 0;
	double t1 = now();
	for (;;) {
		int left_ms = (int)((t1 + limit_s - now()) * 1000);
		if (left_ms <= 0) { timed_out = 1; break; }
		struct pollfd pfd = { done[0], POLLIN, 0 };
		int r = poll(&pfd, 1, left_ms);
		if (r < 0 && errno == EINTR) continue;
		if (r <= 0) { timed_out = 1; break; }
		ssize_t n = read(done[0], buf, sizeof(buf));
		if (n <= 0) break; /* the pressure process exited or was killed */
		/* Rounds that finish close together arrive in one read: one line each. */
		for (ssize_t i = 0; i < n; i++) {
			rounds_done++;
			fprintf(stderr, "mixpress: round %ld/%ld at %.1fs\n", rounds_done, rounds, now() - t1);
		}
		if (rounds_done >= rounds) break; /* done: no time limit on its exit */
	}
	if (timed_out) kill(pp, SIGKILL);
	int st;
	waitpid(pp, &st, 0);
	int pressure_killed = !timed_out && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
	double t_pressure = now() - t1;
	for (int i = 0; i < readers; i++) kill(rp[i], SIGTERM);
	int readers_killed = 0;
	for (int i = 0; i < readers; i++) {
		waitpid(rp[i], &st, 0);
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) readers_killed++;
	}
	printf("RESULT {\"rounds\":%ld,\"rounds_done\":%ld,\"pressure_oom_killed\":%s,"
	       "\"readers_oom_killed\":%d,\"timed_out\":%s,\"warm_s\":%.1f,\"pressure_s\":%.1f}\n",
	       rounds, rounds_done, pressure_killed ? "true" : "false", readers_killed,
	       timed_out ? "true" : "false", t_warm, t_pressure);
	return 0;
}

/* ---- swapmix ---- */

/* zipf(theta) ranks by inverse CDF over n items, scattered over the range by
 * an odd multiplier (a bijection mod a power of two, so hot items are not
 * all adjacent, as fio's zipf is not). */
struct zipf { double *cdf; size_t n, mask; uint64_t rng; };

static void zipf_init(struct zipf *z, size_t n, double theta, uint64_t seed)
{
	size_t p2 = 1;
	while (p2 < n) p2 <<= 1;
	z->n = n; z->mask = p2 - 1; z->rng = seed;
	z->cdf = malloc(n * sizeof(double));
	if (!z->cdf) { perror("malloc"); exit(1); }
	double sum = 0;
	for (size_t i = 0; i < n; i++) { sum += 1.0 / pow(i + 1, theta); z->cdf[i] = sum; }
	for (size_t i = 0; i < n; i++) z->cdf[i] /= sum;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
	return *s;
}

static size_t zipf_next(struct zipf *z)
{
	double u = (xorshift(&z->rng) >> 11) * (1.0 / 9007199254740992.0);
	size_t lo = 0, hi = z->n - 1;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (z->cdf[mid] < u) lo = mid + 1; else hi = mid;
	}
	for (size_t idx = (lo * 0x9E3779B97F4A7C15ULL) & z->mask;; idx = (idx * 0x9E3779B97F4A7C15ULL + 1) & z->mask)
		if (idx < z->n) return idx;
}

static int swapmix(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: mixpress swapmix FILE ANON_MB SECONDS ANON_THINK_US FILE_THINK_US\n");
		return 2;
	}
	const char *file = argv[2];
	size_t anon = (size_t)arg_long(argv[3], "ANON_MB") << 20;
	long secs = arg_long(argv[4], "SECONDS");
	long anon_think = arg_long(argv[5], "ANON_THINK_US");
	long file_think = arg_long(argv[6], "FILE_THINK_US");
	int go[2], res[2];
	if (pipe(go) || pipe(res)) { perror("pipe"); return 1; }
	prctl(PR_SET_TIMERSLACK, 1UL);
	pid_t kids[2];
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		if (kids[k]) continue;
		close(go[1]); close(res[0]);
		unsigned long ops = 0;
		struct zipf z;
		char c;
		if (k == 0) {
			uint64_t s = 0x1234567;
			uint64_t *p = mmap(NULL, anon, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED) { perror("mmap"); _exit(1); }
			/* Random words: lz4 in zram cannot shrink them much, and no
			 * page is a same-filled page. */
			for (size_t i = 0; i < anon / 8; i++) p[i] = xorshift(&s);
			zipf_init(&z, anon / PAGE, 0.9, 42);
			if (write(res[1], "r", 1) != 1 || read(go[0], &c, 1) != 1) _exit(1);
			double end = now() + secs;
			while (now() < end) {
				for (int i = 0; i < 64; i++) {
					size_t pg = zipf_next(&z);
					p[pg * (PAGE / 8) + (ops & 511)] = xorshift(&s);
					ops++;
					if (anon_think) sleep_us(anon_think);
				}
			}
		} else {
			int fd = open(file, O_RDONLY);
			struct stat st;
			static char buf[65536];
			if (fd < 0 || fstat(fd, &st)) { perror("open"); _exit(1); }
			size_t size = st.st_size & ~(PAGE - 1);
			for (size_t off = 0; off < size; off += sizeof(buf))
				if (pread(fd, buf, sizeof(buf), off) < 0) { perror("pread"); _exit(1); }
			zipf_init(&z, size / PAGE, 0.9, 43);
			if (write(res[1], "r", 1) != 1 || read(go[0], &c, 1) != 1) _exit(1);
			double end = now() + secs;
			while (now() < end) {
				for (int i = 0; i < 64; i++) {
					if (pread(fd, buf, PAGE, zipf_next(&z) * PAGE) < 0) { perror("pread"); _exit(1); }
					ops++;
					if (file_think) sleep_us(file_think);
				}
			}
		}
		FILE *f = fdopen(res[1], "w");
		fprintf(f, "%c%lu\n", k ? 'f' : 'a', ops);
		fclose(f);
		_exit(0);
	}
	close(go[0]); close(res[1]);
	/* The model's "loaded" barrier: both have loaded their data. */
	char c;
	for (int k = 0; k < 2; k++)
		if (read(res[0], &c, 1) != 1) { fprintf(stderr, "mixpress: a worker died while loading\n"); return 1; }
	double t0 = now();
	if (write(go[1], "gg", 2) != 2) return 1;
	close(go[1]);
	unsigned long aops = 0, fops = 0;
	FILE *f = fdopen(res[0], "r");
	char line[64];
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == 'a') aops = strtoul(line + 1, NULL, 10);
		if (line[0] == 'f') fops = strtoul(line + 1, NULL, 10);
	}
	int st, killed = 0;
	for (int k = 0; k < 2; k++) {
		waitpid(kids[k], &st, 0);
		if (WIFSIGNALED(st)) killed++;
	}
	printf("RESULT {\"anon_ops\":%lu,\"file_ops\":%lu,\"secs\":%.1f,\"killed\":%d}\n",
	       aops, fops, now() - t0, killed);
	return 0;
}

/* ---- ycsb ---- */

/* YCSB's ScrambledZipfianGenerator: ZipfianGenerator over 10^10 + 1 items
 * (theta 0.99, its precomputed zeta), then FNV-1a of the rank modulo the
 * item count (crates/workload/src/access.rs has the same). */
#define YCSB_ITEMS 10000000001.0
#define YCSB_ZETAN 26.46902820178302
static uint64_t ycsb_next(uint64_t *rng, uint64_t n)
{
	const double theta = 0.99, zeta2 = 1.0 + pow(2.0, -theta);
	const double alpha = 1.0 / (1.0 - theta);
	const double eta = (1.0 - pow(2.0 / YCSB_ITEMS, 1.0 - theta)) / (1.0 - zeta2 / YCSB_ZETAN);
	double u = (xorshift(rng) >> 11) * (1.0 / 9007199254740992.0);
	double uz = u * YCSB_ZETAN;
	uint64_t rank = uz < 1.0 ? 0 : uz < 1.0 + pow(0.5, theta) ? 1
		: (uint64_t)(YCSB_ITEMS * pow(eta * u - eta + 1.0, alpha));
	uint64_t h = 0xCBF29CE484222325ULL;
	for (int i = 0; i < 8; i++) {
		h ^= rank & 0xff;
		rank >>= 8;
		h *= 1099511628211ULL;
	}
	int64_t sh = (int64_t)h;
	return (uint64_t)(sh < 0 ? -sh : sh) % n;
}

struct ycsb_arg {
	int fd, id;
	size_t file_blocks, read_bytes, anon_pages;
	volatile char *cache;
	long cpu_us;
	double end;
	unsigned long ops;
	double busy;
};

static void *ycsb_thread(void *arg)
{
	struct ycsb_arg *a = arg;
	uint64_t rng = 0x9E3779B97F4A7C15ULL * (a->id + 1);
	char *buf = malloc(a->read_bytes);
	unsigned sink = 0;
	if (!buf) return NULL;
	while (now() < a->end) {
		double t = now();
		sink += a->cache[ycsb_next(&rng, a->anon_pages) * PAGE];
		if (pread(a->fd, buf, a->read_bytes, ycsb_next(&rng, a->file_blocks) * a->read_bytes) < 0) {
			perror("ycsb: pread");
			break;
		}
		double spin = now() + a->cpu_us * 1e-6;
		while (now() < spin)
			;
		a->busy += now() - t;
		a->ops++;
	}
	free(buf);
	return (void *)(uintptr_t)(sink == 0xdeadbeef);
}

static int ycsb(int argc, char **argv)
{
	if (argc != 8) {
		fprintf(stderr, "usage: mixpress ycsb FILE ANON_MB THREADS SECONDS READ_KB CPU_US\n");
		return 2;
	}
	size_t anon = (size_t)arg_long(argv[3], "ANON_MB") << 20;
	long threads = arg_long(argv[4], "THREADS");
	long secs = arg_long(argv[5], "SECONDS");
	size_t read_bytes = (size_t)arg_long(argv[6], "READ_KB") << 10;
	long cpu_us = arg_long(argv[7], "CPU_US");
	if (threads < 1 || threads > 64 || !read_bytes || !anon) {
		fprintf(stderr, "mixpress: ycsb: THREADS 1..64, READ_KB and ANON_MB > 0\n");
		return 2;
	}
	int fd = open(argv[2], O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) { perror("ycsb: open"); return 1; }
	char *cache = mmap(NULL, anon, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (cache == MAP_FAILED) { perror("ycsb: mmap"); return 1; }
	uint64_t s = 0x1234567;
	for (size_t i = 0; i < anon; i += PAGE)
		*(uint64_t *)(cache + i) = xorshift(&s);
	pthread_t tid[64];
	struct ycsb_arg a[64];
	double t0 = now();
	for (long i = 0; i < threads; i++) {
		a[i] = (struct ycsb_arg){ fd, (int)i, st.st_size / read_bytes, read_bytes, anon / PAGE,
					  cache, cpu_us, t0 + secs, 0, 0 };
		if (pthread_create(&tid[i], NULL, ycsb_thread, &a[i])) { perror("pthread_create"); return 1; }
	}
	unsigned long ops = 0;
	double busy = 0;
	for (long i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		ops += a[i].ops;
		busy += a[i].busy;
	}
	double el = now() - t0;
	printf("RESULT {\"ops\":%lu,\"secs\":%.2f,\"ops_per_s\":%.1f,\"avg_latency_us\":%.1f}\n",
	       ops, el, ops / el, ops ? busy / ops * 1e6 : 0.0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "aging")) return aging(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "swapmix")) return swapmix(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "ycsb")) return ycsb(argc, argv);
	fprintf(stderr, "usage: mixpress aging|swapmix|ycsb ...\n");
	return 2;
}
