// shm_convoy: a server made of processes whose workers share memory that
// each maps at an address of its own, as PostgreSQL's dynamic shared memory
// segments are mapped by every backend that attaches them: the parent
// creates one shared memory object (memfd_create: "/memfd:shm_convoy"),
// puts a process-shared mutex in it, and forks WORKERS children. Each child
// maps the object itself, at an address it asks for, so no two children
// map it at one address; then it queues on the mutex in a
// loop, holding it for HOLD_US microseconds (busy) each time:
//
//   worker:  worker_main -> serve_request -> update_shared -> pthread_mutex_lock
//   parent:  main -> pause
//
// The kernel keys the children's waits on one futex (a shared futex is its
// object and offset, not its address), so they are one lock.
//
// usage: shm_convoy WORKERS [HOLD_US]
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

struct segment {
	char header[256]; // the mutex lies at an offset of its own, not 0
	pthread_mutex_t mutex;
	long updates;
};

volatile long served;

static long now_us(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static void busy(long us) {
	long until = now_us() + us;
	while (now_us() < until)
		served++;
}

NOINLINE void update_shared(struct segment *seg, long hold_us) {
	pthread_mutex_lock(&seg->mutex);
	busy(hold_us);
	seg->updates++;
	pthread_mutex_unlock(&seg->mutex);
}

NOINLINE void serve_request(struct segment *seg, long hold_us) {
	update_shared(seg, hold_us);
	busy(hold_us / 10); // the request's own work, outside the lock
}

NOINLINE void worker_main(struct segment *seg, long hold_us) {
	for (;;) {
		serve_request(seg, hold_us);
		served++;
	}
}

int main(int argc, char **argv) {
	int workers = argc > 1 ? atoi(argv[1]) : 4;
	long hold_us = argc > 2 ? atol(argv[2]) : 500;
	int fd = memfd_create("shm_convoy", 0);
	if (fd < 0 || ftruncate(fd, sizeof(struct segment)) != 0) {
		perror("memfd");
		return 1;
	}
	struct segment *seg = mmap(NULL, sizeof *seg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (seg == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	pthread_mutexattr_t attr;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&seg->mutex, &attr);
	// The children map the object themselves: none inherits this mapping.
	munmap(seg, sizeof *seg);

	size_t room = 0;
	for (int i = 0; i < argc; i++)
		room += strlen(argv[i]) + 1;
	pid_t parent = getpid();
	for (int i = 0; i < workers; i++) {
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(0);
			// Each child asks for an address of its own, a megabyte
			// apart below where the kernel would put the mapping.
			char *probe = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (probe == MAP_FAILED)
				_exit(1);
			munmap(probe, 4096);
			void *hint = probe - ((size_t)(i + 1) << 20);
			struct segment *mine = mmap(hint, sizeof *mine, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (mine == MAP_FAILED)
				_exit(1);
			memset(argv[0], 0, room);
			snprintf(argv[0], room, "shm_convoy: worker");
			worker_main(mine, hold_us);
		}
	}
	printf("READY\n");
	fflush(stdout);
	for (;;)
		pause();
}
