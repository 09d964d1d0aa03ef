// fsops.c: a wasi-libc program for iovfs run. It writes a file with
// writev, reads it back with one readv into three segments, lists its
// directory, and prints what it saw; the test compares the output with
// the same program built for the host.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: fsops DIR\n");
		return 2;
	}
	if (chdir(argv[1]) != 0) {
		perror("chdir");
		return 1;
	}
	int fd = open("v.txt", O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fd < 0) {
		perror("open");
		return 1;
	}
	struct iovec w[3] = {{"alpha ", 6}, {"beta ", 5}, {"gamma\n", 6}};
	printf("writev: %zd\n", writev(fd, w, 3));
	printf("lseek: %lld\n", (long long)lseek(fd, 0, SEEK_SET));
	char a[4], b[8], c[16];
	struct iovec r[3] = {{a, sizeof a}, {b, sizeof b}, {c, sizeof c}};
	ssize_t n = readv(fd, r, 3);
	printf("readv: %zd [%.4s|%.8s|%.*s]\n", n, a, b, (int)(n > 12 ? n - 12 : 0), c);
	printf("pread at 6: ");
	char p[5] = {0};
	printf("%zd %.4s\n", pread(fd, p, 4, 6), p);
	struct stat st;
	fstat(fd, &st);
	printf("size: %lld regular: %d\n", (long long)st.st_size, S_ISREG(st.st_mode));
	close(fd);
	int rc = open("missing", O_RDONLY);
	printf("open missing: %d %s\n", rc, strerror(errno));
	printf("mkdir: %d\n", mkdir("sub", 0755));
	rc = mkdir("sub", 0755);
	printf("mkdir again: %d %s\n", rc, strerror(errno));
	printf("rename: %d\n", rename("v.txt", "sub/w.txt"));
	DIR *d = opendir("sub");
	struct dirent *e;
	int entries = 0;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			printf("entry: %s\n", e->d_name), entries++;
	closedir(d);
	printf("entries: %d\n", entries);
	printf("unlink: %d\n", unlink("sub/w.txt"));
	printf("rmdir: %d\n", rmdir("sub"));
	return 0;
}
