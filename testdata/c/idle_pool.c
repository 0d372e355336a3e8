// idle_pool: N threads that sleep, and two that wait for a signal to do
// something: SIGUSR1 makes the "waker" thread switch off its CPU 20 times
// (20 sleeps of 1 ms) and print "WOKE <count>"; SIGUSR2 makes the "leaver"
// thread print "LEFT" and exit. It prints the two threads' tids as
// "WAKER <tid>" and "LEAVER <tid>". For the tests of threads read less
// often while idle.
//
// usage: idle_pool N
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int wake_pipe[2], leave_pipe[2];
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ready_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cond = PTHREAD_COND_INITIALIZER;
static int ready;

static void say(const char *fmt, long v) {
	pthread_mutex_lock(&out_lock);
	printf(fmt, v);
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

static void started(void) {
	pthread_mutex_lock(&ready_lock);
	ready++;
	pthread_cond_signal(&ready_cond);
	pthread_mutex_unlock(&ready_lock);
}

static void *sleeper(void *arg) {
	(void)arg;
	for (;;) sleep(3600);
	return NULL;
}

static void *waker(void *arg) {
	(void)arg;
	say("WAKER %ld\n", (long)syscall(SYS_gettid));
	started();
	long n = 0;
	char c;
	while (read(wake_pipe[0], &c, 1) == 1) {
		for (int i = 0; i < 20; i++) usleep(1000);
		say("WOKE %ld\n", ++n);
	}
	return NULL;
}

static void *leaver(void *arg) {
	(void)arg;
	say("LEAVER %ld\n", (long)syscall(SYS_gettid));
	started();
	char c;
	if (read(leave_pipe[0], &c, 1) == 1) say("LEFT %ld\n", 1);
	return NULL;
}

static void on_signal(int sig) {
	char c = 1;
	ssize_t r = write(sig == SIGUSR1 ? wake_pipe[1] : leave_pipe[1], &c, 1);
	(void)r;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: %s N\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[1]);
	if (pipe(wake_pipe) != 0 || pipe(leave_pipe) != 0) { perror("pipe"); return 1; }
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	// The helpers block the signals, so that the handler runs on the main
	// thread and only the pipe wakes them.
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	pthread_t t;
	if (pthread_create(&t, &attr, waker, NULL) != 0) { perror("pthread_create"); return 1; }
	pthread_setname_np(t, "waker");
	if (pthread_create(&t, &attr, leaver, NULL) != 0) { perror("pthread_create"); return 1; }
	pthread_setname_np(t, "leaver");
	char name[32];
	for (int i = 0; i < n; i++) {
		if (pthread_create(&t, &attr, sleeper, NULL) != 0) { perror("pthread_create"); return 1; }
		snprintf(name, sizeof name, "sleeper-%d", i);
		pthread_setname_np(t, name);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_mutex_lock(&ready_lock);
	while (ready < 2) pthread_cond_wait(&ready_cond, &ready_lock);
	pthread_mutex_unlock(&ready_lock);
	printf("READY\n");
	fflush(stdout);
	for (;;) pause();
}
