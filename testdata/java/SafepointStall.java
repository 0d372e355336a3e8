// Scenario: a time-to-safepoint stall. Thread "matcher-3" runs a long
// counted loop that C2 compiles without safepoint polls (the scenario runs
// with -XX:-UseCountedLoopSafepoints: testjvm's scenarioFlags), beside
// allocating threads ("allocator-1", "allocator-2") that soon need a
// collection. The collection's safepoint then waits for matcher-3: every
// other Java thread stops at the safepoint and sleeps, and the JVM answers
// nothing (a thread dump, jcmd) until the loop ends.
//
// The loop is calibrated at start to last about arg1 seconds (default 40)
// on this machine; it prints "STALL begin" before each loop and "STALL end
// <ms>" after it, then sleeps 2 s (the JVM catches up) and loops again.
// Prints READY once spin() is compiled and calibrated, then runs until
// killed.
public class SafepointStall {
    static volatile long sink;

    // Two nested int loops: both counted, so with
    // -XX:-UseCountedLoopSafepoints neither keeps a safepoint poll once C2
    // compiles the method, and the method's own poll (at its return) comes
    // only when both end.
    static long spin(int n) {
        long h = 1;
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                h = h * 31 + (i ^ j);
            }
        }
        return h;
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 40;
        // Warm up until C2 has compiled spin(), then time one call.
        for (int k = 0; k < 3000; k++) {
            sink += spin(300);
        }
        long t0 = System.nanoTime();
        sink += spin(20000);
        double perIteration = (System.nanoTime() - t0) / (20000.0 * 20000.0);
        int n = (int) Math.min(Integer.MAX_VALUE, Math.sqrt(seconds * 1e9 / perIteration));
        System.out.println("calibrated: " + perIteration + " ns per iteration, n=" + n);
        for (int a = 1; a <= 2; a++) {
            Thread t = new Thread(() -> {
                while (true) {
                    byte[] b = new byte[1024];
                    sink += b.length;
                }
            }, "allocator-" + a);
            t.setDaemon(true);
            t.start();
        }
        Thread matcher = new Thread(() -> {
            while (true) {
                long s = System.nanoTime();
                System.out.println("STALL begin");
                sink += spin(n);
                System.out.println("STALL end " + (System.nanoTime() - s) / 1_000_000);
                try {
                    Thread.sleep(2000);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "matcher-3");
        matcher.start();
        System.out.println("READY");
        matcher.join();
    }
}
