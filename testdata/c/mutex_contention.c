// mutex_contention: N threads contend for one global pthread mutex while M
// threads of an idle pool wait on a condition variable for work that never
// comes. ctprof must report the mutex as a lock hotspot (named by its
// symbol) and the condition apart, as waiting.
//
// usage: mutex_contention N_CONTENDERS M_IDLE HOLD_MICROS
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

pthread_mutex_t contended_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t work_ready = PTHREAD_COND_INITIALIZER;
volatile unsigned long counter;
static int hold_micros;
static int work_available;

static void *contender(void *arg) {
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&contended_mutex);
		counter++;
		usleep(hold_micros); // holds the lock while sleeping: the others queue
		pthread_mutex_unlock(&contended_mutex);
	}
	return NULL;
}

static void *idle_worker(void *arg) {
	(void)arg;
	pthread_mutex_lock(&pool_mutex);
	while (!work_available)
		pthread_cond_wait(&work_ready, &pool_mutex);
	pthread_mutex_unlock(&pool_mutex);
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: %s N_CONTENDERS M_IDLE HOLD_MICROS\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[1]), m = atoi(argv[2]);
	hold_micros = atoi(argv[3]);
	char name[32]; // names stay under the kernel's 16 bytes for the counts used
	for (int i = 0; i < m; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, idle_worker, NULL) != 0) { perror("pthread_create"); return 1; }
		snprintf(name, sizeof name, "idle-%d", i);
		pthread_setname_np(t, name);
	}
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, contender, NULL) != 0) { perror("pthread_create"); return 1; }
		snprintf(name, sizeof name, "contender-%d", i);
		pthread_setname_np(t, name);
	}
	printf("READY\n");
	fflush(stdout);
	for (;;) pause();
}
