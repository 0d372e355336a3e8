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
// With "churn" they wait on the shared semaphore as with "shared", but each
// for a life of its own (100 to 300 ms), then exits, or (every other one)
// execs sleep(1) for a moment, as a prefork server's workers retire after
// so many requests; the parent forks a new worker for every one that ends.
//
// usage: forked_workers WORKERS [shared|private|churn [TOKEN]]   (TOKEN goes
// into the workers' titles too, after their role)
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
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

struct shared {
	sem_t slots;
};

static struct shared *shm;
// churn: the worker's end of life (CLOCK_REALTIME, as sem_timedwait's).
static struct timespec retire_at;
static int churn;
static pthread_mutex_t own_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t own_cond = PTHREAD_COND_INITIALIZER;
volatile long served;

NOINLINE void take_slot(int private) {
	if (private) {
		pthread_mutex_lock(&own_mutex);
		pthread_cond_wait(&own_cond, &own_mutex);
		pthread_mutex_unlock(&own_mutex);
	} else if (churn) {
		sem_timedwait(&shm->slots, &retire_at);
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
		struct timespec now;
		if (churn && clock_gettime(CLOCK_REALTIME, &now) == 0 &&
		    (now.tv_sec > retire_at.tv_sec || (now.tv_sec == retire_at.tv_sec && now.tv_nsec >= retire_at.tv_nsec))) {
			if (getpid() % 2)
				execl("/bin/sleep", "sleep", "0.1", (char *)NULL);
			_exit(0);
		}
	}
}

static void retire_after(long ms) {
	clock_gettime(CLOCK_REALTIME, &retire_at);
	retire_at.tv_nsec += (ms % 1000) * 1000000L;
	retire_at.tv_sec += ms / 1000 + retire_at.tv_nsec / 1000000000L;
	retire_at.tv_nsec %= 1000000000L;
}

int main(int argc, char **argv) {
	int workers = argc > 1 ? atoi(argv[1]) : 4;
	int private = argc > 2 && strcmp(argv[2], "private") == 0;
	churn = argc > 2 && strcmp(argv[2], "churn") == 0;
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
	for (long n = 0;; n++) {
		if (n >= workers) {
			if (n == workers) {
				printf("READY\n");
				fflush(stdout);
			}
			if (!churn) {
				pause();
				continue;
			}
			// A worker ended: another takes its place.
			if (wait(NULL) < 0)
				pause();
		}
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
			retire_after(100 + (n * 37) % 200);
			worker_main(private);
		}
	}
}
