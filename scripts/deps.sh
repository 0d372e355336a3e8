#!/usr/bin/env bash
# Checks that the tools ctprof's tests and demo need are present and installs
# what Debian packages can provide when running as root. Fails with a clear
# message when something cannot be had; nothing is skipped silently.
set -euo pipefail

JDK17_HOME=${CTPROF_JDK17_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
JDK25_HOME=${CTPROF_JDK25_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
missing_pkgs=()

need() { # need CMD DEBIAN_PACKAGE
	command -v "$1" >/dev/null 2>&1 || missing_pkgs+=("$2")
}
need go golang-go
need cc gcc
need git git
need promtool prometheus # promtool and the prometheus server, for internal/metrics tests
need chromium chromium   # the HTML report's browser tests
need tmux tmux           # the terminal test of ctprof top
need npm npm             # make assets fetches ECharts from the npm registry
need openssl openssl     # checks the fetched ECharts' integrity
need mvn maven           # make javalibs fetches the pinned third-party jars with Maven
need taskset util-linux  # the one-CPU test of ctprof scale
need prometheus-process-exporter prometheus-process-exporter # the comparison benchmark of internal/metrics
need gdb gdb               # the native stack tests take the truth from gdb -batch
need memcached memcached   # a real multi-threaded server from Debian, profiled under load
# MariaDB and sysbench: a real database whose transactions queue on row locks
# (internal/cli/mariadb_test.go); mariadbd lives in /usr/sbin, which is not
# on a plain user's PATH
need /usr/sbin/mariadbd mariadb-server
need sysbench sysbench
# Redis and its benchmark: an event-loop server with background and I/O
# threads, in the native servers' corpus (internal/testservers)
need redis-server redis-server
need redis-benchmark redis-tools
# RocksDB's db_bench (its engine in-process, writers queued in write groups)
# and HAProxy (an event loop per thread): the native wait model's corpus
# (internal/testservers); haproxy lives in /usr/sbin
need db_bench rocksdb-tools
need /usr/sbin/haproxy haproxy
# Apache httpd (event MPM) under ab, and Varnish Cache: thread-pool servers
# in the native servers' corpus (internal/testservers); apache2 and
# varnishd live in /usr/sbin
need /usr/sbin/apache2 apache2
need ab apache2-utils
need /usr/sbin/varnishd varnish
need c++ g++               # the C++ test programs (std::mutex)
# A real debuginfod server, serving the debug file of a stripped test program
# (internal/procfs: symbols fetched by build-id over DEBUGINFOD_URLS)
need debuginfod debuginfod
# PostgreSQL under pgbench and nginx under ab: servers made of processes
# (a backend per client; a master and its workers), sampled as one tree
# (internal/cli/tree_test.go); the server binaries live outside PATH
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || missing_pkgs+=(postgresql)
need pgbench postgresql-client
need /usr/sbin/nginx nginx
# PHP-FPM behind nginx: a pool of processes whose requests of one session
# queue on the session file's lock (flock), a file lock across processes
# (internal/cli/filelock_test.go); php-fpm8.2 lives in /usr/sbin
compgen -G '/usr/sbin/php-fpm*' >/dev/null || missing_pkgs+=(php-fpm)
[ -x "$JDK17_HOME/bin/javac" ] && [ -x "$JDK17_HOME/bin/jcmd" ] || missing_pkgs+=(openjdk-17-jdk-headless)

if [ ${#missing_pkgs[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "deps: installing ${missing_pkgs[*]}"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing_pkgs[@]}" >/dev/null
	else
		echo "deps: missing ${missing_pkgs[*]}; install them (Debian: apt-get install ${missing_pkgs[*]}) or run make as root" >&2
		exit 1
	fi
fi

if [ ! -x "$JDK25_HOME/bin/javac" ] || [ ! -x "$JDK25_HOME/bin/jcmd" ]; then
	echo "deps: no JDK 25 at $JDK25_HOME (set CTPROF_JDK25_HOME to a JDK 25 home); the JDK 25 tests cannot run" >&2
	exit 1
fi
echo "deps: go $(go env GOVERSION), JDK 17 at $JDK17_HOME, JDK 25 at $JDK25_HOME, $(cc --version | head -1)"

# The exact futex waits (attach --exact-waits) read the kernel's syscall
# tracepoints, whose ids live in tracefs: mount it where the kernel
# expects it when it is not mounted (root only; the tests that need it say
# so when it is missing).
if [ "$(id -u)" = 0 ] && [ -d /sys/kernel/tracing ] && [ ! -e /sys/kernel/tracing/events ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && echo "deps: mounted tracefs at /sys/kernel/tracing" || echo "deps: could not mount tracefs at /sys/kernel/tracing (exact futex waits are unavailable)" >&2
fi
