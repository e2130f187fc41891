/*
 * folioprobe: the sizes of the page-cache folios a file is held in, as the
 * kernel shows them: /proc/self/pagemap gives each mapped page's PFN and
 * /proc/kpageflags its KPF_COMPOUND_HEAD / KPF_COMPOUND_TAIL bits (root).
 *
 *   folioprobe read FILE BS [seq]      evict FILE's cache (fadvise
 *                                      DONTNEED), read it in BS-byte read(2)s
 *                                      (seq: POSIX_FADV_SEQUENTIAL first, as
 *                                      fio does), then report
 *   folioprobe write FILE BS SIZE      write SIZE bytes in BS-byte write(2)s
 *                                      to a new FILE, then report
 *
 * The report maps the file and touches each page (the data is cached: no
 * I/O), then prints one JSON line:
 * {"pages":N,"folios":{"ORDER":COUNT,...},"no_pfn":M,...} where a folio is
 * a compound head and its tails, or a lone page, and M pages showed no PFN
 * (not present, or hidden without CAP_SYS_ADMIN: then the histogram means
 * nothing).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define KPF_COMPOUND_HEAD 15
#define KPF_COMPOUND_TAIL 16

static void die(const char *m)
{
	perror(m);
	exit(1);
}

static void report(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die(path);
	struct stat st;
	if (fstat(fd, &st))
		die("fstat");
	long psz = sysconf(_SC_PAGESIZE);
	size_t pages = (st.st_size + psz - 1) / psz;
	volatile unsigned char *p = mmap(NULL, pages * psz, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	unsigned long sum = 0;
	for (size_t i = 0; i < pages; i++)
		sum += p[i * psz];
	int pm = open("/proc/self/pagemap", O_RDONLY);
	int kf = open("/proc/kpageflags", O_RDONLY);
	if (pm < 0 || kf < 0)
		die("pagemap/kpageflags");
	unsigned long counts[32] = { 0 }, no_pfn = 0;
	size_t run = 0; /* pages of the folio being counted */
	for (size_t i = 0; i <= pages; i++) {
		uint64_t ent = 0, fl = 0;
		int head = 1, tail = 0;
		if (i < pages) {
			off_t o = ((uintptr_t)p / psz + i) * 8;
			if (pread(pm, &ent, 8, o) != 8)
				die("pagemap read");
			uint64_t pfn = ent & ((1ULL << 55) - 1);
			if ((ent >> 63) & 1 && pfn) {
				if (pread(kf, &fl, 8, pfn * 8) != 8)
					die("kpageflags read");
				tail = (fl >> KPF_COMPOUND_TAIL) & 1;
				head = !tail;
			} else {
				/* Not present, or the PFN hidden (no CAP_SYS_ADMIN):
				 * counted apart, so a histogram of lone pages is
				 * not mistaken for order-0 folios. */
				no_pfn++;
			}
		}
		if (tail) {
			run++;
			continue;
		}
		if (run) {
			int order = 0;
			while ((1UL << order) < run)
				order++;
			counts[order]++;
		}
		run = head ? 1 : 0;
	}
	printf("{\"pages\":%zu,\"folios\":{", pages);
	const char *sep = "";
	for (int o = 0; o < 32; o++)
		if (counts[o]) {
			printf("%s\"%d\":%lu", sep, o, counts[o]);
			sep = ",";
		}
	printf("},\"no_pfn\":%lu,\"touch_sum\":%lu}\n", no_pfn, sum & 1);
	munmap((void *)p, pages * psz);
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: folioprobe read FILE BS [seq] | write FILE BS SIZE\n");
		return 2;
	}
	size_t bs = strtoul(argv[3], NULL, 0);
	char *buf = aligned_alloc(4096, bs ? (bs + 4095) / 4096 * 4096 : 4096);
	if (!bs || !buf)
		return 2;
	if (!strcmp(argv[1], "read")) {
		int fd = open(argv[2], O_RDONLY);
		if (fd < 0)
			die(argv[2]);
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		if (argc > 4 && !strcmp(argv[4], "seq"))
			posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
		while (read(fd, buf, bs) > 0)
			;
		close(fd);
	} else if (!strcmp(argv[1], "write") && argc > 4) {
		size_t size = strtoul(argv[4], NULL, 0);
		int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die(argv[2]);
		memset(buf, 0x5a, bs);
		for (size_t done = 0; done < size; done += bs)
			if (write(fd, buf, bs) != (ssize_t)bs)
				die("write");
		close(fd);
	} else {
		return 2;
	}
	report(argv[2]);
	return 0;
}
