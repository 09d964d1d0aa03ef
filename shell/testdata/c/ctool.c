// ctool is the C program (wasi-libc) the shell's tests run: its first
// argument names what it does.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: ctool COMMAND [ARG]...\n");
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "args")) {
		for (int i = 2; i < argc; i++)
			printf("<%s>\n", argv[i]);
		return 0;
	}
	if (!strcmp(cmd, "exit"))
		return atoi(argv[2]);
	if (!strcmp(cmd, "rot13")) { // standard input to standard output
		char buf[65536];
		size_t n;
		while ((n = fread(buf, 1, sizeof buf, stdin)) > 0) {
			for (size_t i = 0; i < n; i++) {
				char c = buf[i];
				if (c >= 'a' && c <= 'z')
					buf[i] = 'a' + (c - 'a' + 13) % 26;
				else if (c >= 'A' && c <= 'Z')
					buf[i] = 'A' + (c - 'A' + 13) % 26;
			}
			if (fwrite(buf, 1, n, stdout) != n)
				return 1;
		}
		return ferror(stdin) ? 1 : 0;
	}
	if (!strcmp(cmd, "cat")) { // a file, relative to $PWD as the shell gives it
		const char *pwd = getenv("PWD");
		if (pwd && chdir(pwd) != 0) {
			perror(pwd);
			return 1;
		}
		FILE *f = fopen(argv[2], "r");
		if (!f) {
			perror(argv[2]);
			return 1;
		}
		int c;
		while ((c = getc(f)) != EOF)
			putchar(c);
		fclose(f);
		return 0;
	}
	if (!strcmp(cmd, "env")) {
		const char *v = getenv(argv[2]);
		printf("%s=%s\n", argv[2], v ? v : "-");
		return 0;
	}
	if (!strcmp(cmd, "trap"))
		__builtin_trap();
	fprintf(stderr, "ctool: unknown command %s\n", cmd);
	return 2;
}
