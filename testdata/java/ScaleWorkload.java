import java.util.concurrent.atomic.LongAdder;

/**
 * One worker thread per available processor (the JVM counts the CPUs of its
 * affinity mask), each repeating a fixed piece of computation. "contended":
 * every piece runs inside a synchronized method of one shared object, so the
 * work is serialized; "independent": the threads share nothing. Prints
 * "throughput <ops> ops/s" twice a second, as load generators do.
 *
 * usage: ScaleWorkload contended|independent
 */
public class ScaleWorkload {
    static final LongAdder OPS = new LongAdder();

    static final class SharedCounter {
        long state = 1;

        synchronized long compute(long x) {
            state = piece(state ^ x);
            return state;
        }
    }

    static long piece(long x) {
        for (int i = 0; i < 1000000; i++) { // about a millisecond
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1 || !(args[0].equals("contended") || args[0].equals("independent"))) {
            System.err.println("usage: ScaleWorkload contended|independent");
            System.exit(2);
        }
        boolean contended = args[0].equals("contended");
        SharedCounter shared = new SharedCounter();
        int n = Runtime.getRuntime().availableProcessors();
        for (int i = 0; i < n; i++) {
            final long seed = i + 1;
            Thread t = new Thread(() -> {
                long x = seed;
                while (true) {
                    x = contended ? shared.compute(x) : piece(x);
                    OPS.increment();
                }
            }, "worker-" + i);
            t.setDaemon(true);
            t.start();
        }
        System.out.println("READY");
        long before = 0;
        long last = System.nanoTime();
        while (true) {
            Thread.sleep(500);
            long now = System.nanoTime();
            long total = OPS.sum();
            System.out.printf("throughput %.0f ops/s%n", (total - before) / ((now - last) / 1e9));
            before = total;
            last = now;
        }
    }
}
