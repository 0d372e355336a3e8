// rwlock_writer: a global pthread rwlock (table_lock) that writer threads
// ("writer-N") hold for a while, asleep, and reader threads ("reader-N")
// take briefly: readers and the other writers queue behind the writer.
// ctprof must call it a lock (its symbol's size says it is an rwlock) and
// name the writer that holds it.
//
// usage: rwlock_writer WRITERS READERS HOLD_MICROS
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static int hold_micros;

static void *writer(void *arg) {
	(void)arg;
	for (;;) {
		pthread_rwlock_wrlock(&table_lock);
		usleep(hold_micros); // held while asleep: the others queue
		pthread_rwlock_unlock(&table_lock);
	}
	return NULL;
}

static void *reader(void *arg) {
	(void)arg;
	for (;;) {
		pthread_rwlock_rdlock(&table_lock);
		pthread_rwlock_unlock(&table_lock);
		usleep(1000);
	}
	return NULL;
}

static void start(void *(*fn)(void *), const char *prefix, int i) {
	pthread_t t;
	char name[16];
	if (pthread_create(&t, NULL, fn, NULL) != 0) {
		perror("pthread_create");
		exit(1);
	}
	snprintf(name, sizeof name, "%s-%d", prefix, i);
	pthread_setname_np(t, name);
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: %s WRITERS READERS HOLD_MICROS\n", argv[0]);
		return 2;
	}
	int w = atoi(argv[1]), r = atoi(argv[2]);
	hold_micros = atoi(argv[3]);
	for (int i = 0; i < w; i++)
		start(writer, "writer", i);
	for (int i = 0; i < r; i++)
		start(reader, "reader", i);
	printf("READY\n");
	fflush(stdout);
	for (;;) pause();
}
