// tcp_server: listens on 127.0.0.1 (an ephemeral port, printed as
// "PORT <n>") and serves each client with a thread of its own that reads
// until the client closes: THREADS_PER_CLIENT threads per connection, like
// the thread-per-user servers ctprof is meant to expose.
//
// usage: tcp_server THREADS_PER_CLIENT
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static int per_client;

static void *helper(void *arg) {
	(void)arg;
	for (;;) usleep(50 * 1000); // a poller that wakes every 50 ms
	return NULL;
}

static void *serve(void *arg) {
	int fd = (int)(long)arg;
	for (int i = 1; i < per_client; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, helper, NULL) == 0)
			pthread_setname_np(t, "session-poll");
	}
	char buf[256];
	while (read(fd, buf, sizeof buf) > 0) {
	}
	close(fd);
	return NULL;
}

int main(int argc, char **argv) {
	per_client = argc > 1 ? atoi(argv[1]) : 1;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {0};
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 128) != 0) { perror("bind/listen"); return 1; }
	socklen_t len = sizeof a;
	getsockname(s, (struct sockaddr *)&a, &len);
	printf("PORT %d\nREADY\n", ntohs(a.sin_port));
	fflush(stdout);
	for (;;) {
		int c = accept(s, NULL, NULL);
		if (c < 0) continue;
		pthread_t t;
		if (pthread_create(&t, NULL, serve, (void *)(long)c) == 0) {
			pthread_setname_np(t, "session");
			pthread_detach(t);
		}
	}
}
