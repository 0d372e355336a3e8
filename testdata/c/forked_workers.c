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
// With "accept" the children serve TCP as a prefork server with several
// listeners does (Apache's prefork MPM): each takes turns on an accept
// mutex, a process-shared pthread mutex in the shared memory ("accept-pi":
// a priority-inheriting one, as Debian's apr makes it), and its holder
// polls the listening socket (bound to 127.0.0.1 before forking, its port
// printed as "PORT n") with the mutex held, accepts, lets go, and answers
// the connection ("ok\n" to each line) until the client closes it:
//
//   holder:  main -> accept_loop -> poll
//   others:  main -> accept_loop -> pthread_mutex_lock
//   serving: main -> accept_loop -> answer -> read
//
// Without clients every child is idle: one waits for a connection, the
// others for their turn to.
//
// usage: forked_workers WORKERS [shared|private|churn|accept|accept-pi [TOKEN]]
// (TOKEN goes into the workers' titles too, after their role)
#define _GNU_SOURCE
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

struct shared {
	sem_t slots;
	pthread_mutex_t accept;
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

static int listen_fd = -1;

// answer serves one connection: a line in, "ok" out, until the client
// closes it.
NOINLINE void answer(int fd) {
	char buf[256];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0) {
		if (write(fd, "ok\n", 3) != 3)
			break;
		served++;
	}
	close(fd);
}

// accept_loop is a prefork child's run loop: its turn on the accept mutex,
// the wait for a connection with the mutex held, then the connection.
NOINLINE void accept_loop(void) {
	for (;;) {
		pthread_mutex_lock(&shm->accept);
		struct pollfd p = {.fd = listen_fd, .events = POLLIN};
		int fd = -1;
		if (poll(&p, 1, -1) == 1)
			fd = accept(listen_fd, NULL, NULL);
		pthread_mutex_unlock(&shm->accept);
		if (fd >= 0)
			answer(fd);
	}
}

// listen_local binds a non-blocking listening socket to a free port of
// 127.0.0.1 and prints it.
static int listen_local(void) {
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
		perror("listen");
		exit(1);
	}
	printf("PORT %d\n", ntohs(a.sin_port));
	fflush(stdout); // before the fork, or every child carries it
	return fd;
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
	int accepting = argc > 2 && strncmp(argv[2], "accept", 6) == 0;
	if (accepting) {
		pthread_mutexattr_t ma;
		pthread_mutexattr_init(&ma);
		pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
		if (strcmp(argv[2], "accept-pi") == 0)
			pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
		if (pthread_mutex_init(&shm->accept, &ma) != 0) {
			perror("accept mutex");
			return 1;
		}
		listen_fd = listen_local();
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
			if (accepting)
				accept_loop();
			worker_main(private);
		}
	}
}
