// std_mutex: named threads queue on a C++ std::mutex in a namespace
// (queue::lock, mangled _ZN5queue4lockE), each holding it while asleep.
// ctprof must name the futex by the demangled symbol.
//
// usage: std_mutex THREADS HOLD_MICROS
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace queue {
std::mutex lock;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		std::fprintf(stderr, "usage: %s THREADS HOLD_MICROS\n", argv[0]);
		return 2;
	}
	int n = std::atoi(argv[1]), hold = std::atoi(argv[2]);
	std::vector<std::thread> threads;
	for (int i = 0; i < n; i++) {
		threads.emplace_back([hold] {
			for (;;) {
				std::lock_guard<std::mutex> g(queue::lock);
				usleep(hold); // held while asleep: the others queue
			}
		});
		std::string name = "cxx-" + std::to_string(i);
		pthread_setname_np(threads.back().native_handle(), name.c_str());
	}
	std::printf("READY\n");
	std::fflush(stdout);
	for (;;) pause();
}
