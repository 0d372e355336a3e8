// forked_workers: a server made of processes, as a prefork server is. The
// parent forks WORKERS children and waits for signals; each child names
// its role in its command line ("forked_workers: worker", as
// setproctitle does) and blocks inside its work on one process-shared
// POSIX semaphore in shared memory that the parent mapped before forking,
// so every child sleeps on the same futex word at the same address:
//
//   worker:  worker_main -> serve_request -> take_slot -> sem_wait
//   parent:  main -> pause
//
// With "private" the children instead each wait on a private condition of their
// own (a pthread_cond_t in their own memory, at the same address in every
// child): words that must not be taken for one across processes.
//
// usage: forked_workers WORKERS [shared|private [TOKEN]]   (TOKEN goes into
// the workers' titles too, after their role)
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

struct shared {
	sem_t slots;
};

static struct shared *shm;
static pthread_mutex_t own_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t own_cond = PTHREAD_COND_INITIALIZER;
volatile long served;

NOINLINE void take_slot(int private) {
	if (private) {
		pthread_mutex_lock(&own_mutex);
		pthread_cond_wait(&own_cond, &own_mutex);
		pthread_mutex_unlock(&own_mutex);
	} else {
		sem_wait(&shm->slots);
	}
	served++;
}

NOINLINE void serve_request(int private) {
	take_slot(private);
	served++;
}

NOINLINE void worker_main(int private) {
	for (;;) {
		serve_request(private);
		served++;
	}
}

int main(int argc, char **argv) {
	int workers = argc > 1 ? atoi(argv[1]) : 4;
	int private = argc > 2 && strcmp(argv[2], "private") == 0;
	shm = mmap(NULL, sizeof *shm, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED || sem_init(&shm->slots, 1, 0) != 0) {
		perror("shared memory");
		return 1;
	}
	// The role goes where argv's strings were, as setproctitle does.
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
			char title[128];
			snprintf(title, sizeof title, "forked_workers: worker%s%s", argc > 3 ? " " : "", argc > 3 ? argv[3] : "");
			memset(argv[0], 0, room);
			snprintf(argv[0], room, "%s", title);
			worker_main(private);
		}
	}
	printf("READY\n");
	fflush(stdout);
	for (;;)
		pause();
}
