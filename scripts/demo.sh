#!/usr/bin/env bash
# make demo: start a small contended Java program (request threads calling one
# synchronized method of a singleton), profile it live with ctprof attach, and
# write the HTML report. Stops the JVM it started, by pid, also on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

JDK_HOME=${CTPROF_JDK17_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
THREADS=${DEMO_THREADS:-8}
DURATION=${DEMO_DURATION:-10s}
OUT=${DEMO_OUT:-bin/demo}
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

mkdir -p "$OUT"
report="$OUT/report.html"
echo "demo: SyncSingleton runs as pid $pid with $THREADS request threads on one synchronized method"
echo "demo: ./bin/ctprof attach $pid --duration $DURATION --interval 500ms --html $report --pprof $OUT/contention.pb.gz"
echo
./bin/ctprof attach "$pid" --duration "$DURATION" --interval 500ms --html "$report" --pprof "$OUT/contention.pb.gz"
echo
echo "demo: the HTML report is $(cd "$(dirname "$report")" && pwd)/$(basename "$report")"
echo "demo: open it in a browser (it needs no network); go tool pprof -top $OUT/contention.pb.gz reads the profile"
