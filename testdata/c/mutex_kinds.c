// mutex_kinds: one global mutex of each glibc kind, each with named threads
// that hold it asleep while the others queue:
//
//   rec-N     recursive_lock   PTHREAD_MUTEX_RECURSIVE, taken twice
//   chk-N     errcheck_lock    PTHREAD_MUTEX_ERRORCHECK
//   adp-N     adaptive_lock    PTHREAD_MUTEX_ADAPTIVE_NP
//   tmd-N     timed_lock       a normal mutex taken with pthread_mutex_timedlock
//   rob-N     robust_lock      PTHREAD_MUTEX_ROBUST (owner in the lock word)
//   pi-N      pi_lock          PTHREAD_PRIO_INHERIT (FUTEX_LOCK_PI; owner in
//                              the lock word)
//
// ctprof must call each a lock and name its holder and kind.
//
// usage: mutex_kinds THREADS_PER_KIND HOLD_MICROS
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t recursive_lock, errcheck_lock, adaptive_lock, timed_lock, robust_lock, pi_lock;
static int hold_micros;

struct group {
	pthread_mutex_t *m;
	int twice, timed;
};

static void *holder(void *arg) {
	struct group *g = arg;
	for (;;) {
		if (g->timed) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 3600;
			if (pthread_mutex_timedlock(g->m, &ts) != 0)
				continue;
		} else {
			pthread_mutex_lock(g->m);
		}
		if (g->twice)
			pthread_mutex_lock(g->m);
		usleep(hold_micros); // held while asleep: the others queue
		if (g->twice)
			pthread_mutex_unlock(g->m);
		pthread_mutex_unlock(g->m);
	}
	return NULL;
}

static void init(pthread_mutex_t *m, int type, int robust, int pi) {
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, type);
	if (robust)
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (pi)
		pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	if (pthread_mutex_init(m, &a) != 0) {
		perror("pthread_mutex_init");
		exit(1);
	}
}

static void start(const char *prefix, int n, struct group *g) {
	for (int i = 0; i < n; i++) {
		pthread_t t;
		char name[16];
		if (pthread_create(&t, NULL, holder, g) != 0) {
			perror("pthread_create");
			exit(1);
		}
		snprintf(name, sizeof name, "%s-%d", prefix, i);
		pthread_setname_np(t, name);
	}
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: %s THREADS_PER_KIND HOLD_MICROS\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[1]);
	hold_micros = atoi(argv[2]);
	init(&recursive_lock, PTHREAD_MUTEX_RECURSIVE, 0, 0);
	init(&errcheck_lock, PTHREAD_MUTEX_ERRORCHECK, 0, 0);
	init(&adaptive_lock, PTHREAD_MUTEX_ADAPTIVE_NP, 0, 0);
	init(&timed_lock, PTHREAD_MUTEX_NORMAL, 0, 0);
	init(&robust_lock, PTHREAD_MUTEX_NORMAL, 1, 0);
	init(&pi_lock, PTHREAD_MUTEX_NORMAL, 0, 1);
	static struct group rec = {&recursive_lock, 1, 0}, chk = {&errcheck_lock, 0, 0}, adp = {&adaptive_lock, 0, 0},
			    tmd = {&timed_lock, 0, 1}, rob = {&robust_lock, 0, 0}, pi = {&pi_lock, 0, 0};
	start("rec", n, &rec);
	start("chk", n, &chk);
	start("adp", n, &adp);
	start("tmd", n, &tmd);
	start("rob", n, &rob);
	start("pi", n, &pi);
	printf("READY\n");
	fflush(stdout);
	for (;;) pause();
}
