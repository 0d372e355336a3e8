// file_locks: processes that queue on file locks, as a pool of PHP workers
// does on one session's file, or writers on a journal's lock. The parent
// forks WORKERS children (titled "file_locks: worker") and waits for
// signals. Each child opens the files itself (an flock lock belongs to an
// open file description, which a fork would share) and, over and over,
// takes a lock for HOLD_MS milliseconds of work and lets go: the even
// children flock(LOCK_EX) DIR/journal, the odd ones lockf(F_LOCK), which is
// fcntl(F_SETLKW), on DIR/ledger:
//
//   even:   worker_main -> append_entry -> take_journal -> flock
//   odd:    worker_main -> post_entry -> take_ledger -> lockf -> fcntl
//   parent: main -> pause
//
// usage: file_locks WORKERS DIR [HOLD_MS]
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

static int hold_ms = 10;

static void hold(void) {
	struct timespec ts = {0, hold_ms * 1000000L};
	nanosleep(&ts, NULL);
}

static NOINLINE void take_journal(int fd) {
	if (flock(fd, LOCK_EX) != 0)
		_exit(3);
}

static NOINLINE void append_entry(int fd) {
	take_journal(fd);
	hold();
	flock(fd, LOCK_UN);
}

static NOINLINE void take_ledger(int fd) {
	if (lockf(fd, F_LOCK, 0) != 0)
		_exit(3);
}

static NOINLINE void post_entry(int fd) {
	take_ledger(fd);
	hold();
	lockf(fd, F_ULOCK, 0);
}

static NOINLINE void worker_main(int even, const char *dir) {
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, even ? "journal" : "ledger");
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		_exit(2);
	struct timespec gap = {0, 1000000L};
	for (;;) {
		if (even)
			append_entry(fd);
		else
			post_entry(fd);
		nanosleep(&gap, NULL);
	}
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: file_locks WORKERS DIR [HOLD_MS]\n");
		return 2;
	}
	int workers = atoi(argv[1]);
	const char *dir = argv[2];
	if (argc > 3)
		hold_ms = atoi(argv[3]);
	for (const char *name = "journal"; name; name = strcmp(name, "journal") == 0 ? "ledger" : NULL) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, name);
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0) {
			perror(path);
			return 2;
		}
		close(fd);
	}
	// The role goes where argv's strings were, as setproctitle does.
	size_t room = 0;
	for (int i = 0; i < argc; i++)
		room += strlen(argv[i]) + 1;
	char dirCopy[4096];
	snprintf(dirCopy, sizeof dirCopy, "%s", dir);
	pid_t parent = getpid();
	for (int i = 0; i < workers; i++) {
		if (fork() == 0) {
			// The children go with their parent, which is all the
			// test stops.
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(0);
			memset(argv[0], 0, room);
			snprintf(argv[0], room, "file_locks: worker");
			worker_main(i % 2 == 0, dirCopy);
		}
	}
	printf("READY\n");
	fflush(stdout);
	for (;;)
		pause();
}
