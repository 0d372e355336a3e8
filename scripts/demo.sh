#!/usr/bin/env bash
# make demo: start a small contended Java program (request threads calling one
# synchronized method of a singleton), take a series of thread dumps of it,
# and let ctprof say what is wrong. Cleans up the JVM it started, by pid, even
# on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

JDK_HOME=${CTPROF_JDK17_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
THREADS=${DEMO_THREADS:-8}
DUMPS=${DEMO_DUMPS:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/ctprof-demo.XXXXXX")
pid=""
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "demo: compiling testdata/java/SyncSingleton.java with $JDK_HOME"
"$JDK_HOME/bin/javac" -d "$work" testdata/java/SyncSingleton.java
"$JDK_HOME/bin/java" -Xmx64m -cp "$work" SyncSingleton "$THREADS" >"$work/app.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
	grep -q '^READY' "$work/app.log" 2>/dev/null && break
	kill -0 "$pid" 2>/dev/null || { echo "demo: the Java program exited:"; cat "$work/app.log"; exit 1; }
	sleep 0.1
done
grep -q '^READY' "$work/app.log" || { echo "demo: the Java program did not start in 30 s"; exit 1; }
echo "demo: SyncSingleton runs as pid $pid with $THREADS request threads; taking $DUMPS dumps 1 s apart"
for i in $(seq 1 "$DUMPS"); do
	"$JDK_HOME/bin/jcmd" "$pid" Thread.print -l >>"$work/dumps.txt"
	[ "$i" -lt "$DUMPS" ] && sleep 1
done
echo "demo: ctprof analyze $work/dumps.txt"
echo
./bin/ctprof analyze "$work/dumps.txt"
