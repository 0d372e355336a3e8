// lock_convoy: named threads queue on mutexes in four kinds of memory, each
// holder sleeping with its mutex held, so that at any instant one thread of
// a group sleeps in nanosleep holding the mutex and the others wait in
// futex(2) on it:
//
//   glob-N   a global mutex (global_lock, in the binary's .bss)
//   heap-N   a mutex malloc'd by main before any thread starts ([heap])
//   shm-N    a process-shared mutex in a MAP_SHARED|MAP_ANONYMOUS mapping
//   stk-N    a mutex on the stack of the thread stk-owner, which queues
//            for it as well
//
// A glibc mutex keeps its owner's TID in the mutex, which ctprof reads; the
// test checks the holder against /proc (the holder sleeps in nanosleep, the
// others wait on the futex). Built with and without symbols, and run twice,
// the names ctprof gives the four must not change.
//
// usage: lock_convoy THREADS_PER_GROUP HOLD_MICROS
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;
static int hold_micros;
static int per_group;

static void *convoy(void *arg) {
	pthread_mutex_t *m = arg;
	for (;;) {
		pthread_mutex_lock(m);
		usleep(hold_micros); // held while asleep: the others queue
		pthread_mutex_unlock(m);
	}
	return NULL;
}

static void start(const char *prefix, int i, pthread_mutex_t *m) {
	pthread_t t;
	char name[16];
	if (pthread_create(&t, NULL, convoy, m) != 0) {
		perror("pthread_create");
		exit(1);
	}
	snprintf(name, sizeof name, "%s-%d", prefix, i);
	pthread_setname_np(t, name);
}

static void *stack_owner(void *arg) {
	(void)arg;
	pthread_mutex_t on_stack = PTHREAD_MUTEX_INITIALIZER;
	for (int i = 0; i < per_group - 1; i++)
		start("stk", i, &on_stack);
	convoy(&on_stack); // never returns: the mutex outlives its users
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: %s THREADS_PER_GROUP HOLD_MICROS\n", argv[0]);
		return 2;
	}
	per_group = atoi(argv[1]);
	hold_micros = atoi(argv[2]);
	pthread_mutex_t *heap_lock = malloc(sizeof *heap_lock);
	pthread_mutex_init(heap_lock, NULL);
	pthread_mutex_t *shm_lock = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm_lock == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	pthread_mutexattr_t attr;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(shm_lock, &attr);
	for (int i = 0; i < per_group; i++) {
		start("glob", i, &global_lock);
		start("heap", i, heap_lock);
		start("shm", i, shm_lock);
	}
	pthread_t t;
	if (pthread_create(&t, NULL, stack_owner, NULL) != 0) {
		perror("pthread_create");
		return 1;
	}
	pthread_setname_np(t, "stk-owner");
	printf("READY\n");
	fflush(stdout);
	for (;;) pause();
}
