import java.util.concurrent.atomic.LongAdder;

/**
 * One worker thread per available processor (the JVM counts the CPUs of its
 * affinity mask), each repeating a fixed piece of computation. "contended":
 * every piece runs inside a synchronized method of one shared object, so the
 * work is serialized; "independent": the threads share nothing. Prints
 * "throughput <ops> ops/s" twice a second, as load generators do.
 *
 * With THREADS the worker count is that instead (for ctprof scale --vary
 * concurrency); with METRICS_PORT it also serves Prometheus text at
 * http://127.0.0.1:METRICS_PORT/metrics with the counter scale_ops_total
 * (for --throughput-metric).
 *
 * usage: ScaleWorkload contended|independent [THREADS [METRICS_PORT]]
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
        if (args.length < 1 || args.length > 3 || !(args[0].equals("contended") || args[0].equals("independent"))) {
            System.err.println("usage: ScaleWorkload contended|independent [THREADS [METRICS_PORT]]");
            System.exit(2);
        }
        boolean contended = args[0].equals("contended");
        SharedCounter shared = new SharedCounter();
        int n = args.length > 1 ? Integer.parseInt(args[1]) : Runtime.getRuntime().availableProcessors();
        if (args.length > 2) {
            com.sun.net.httpserver.HttpServer http = com.sun.net.httpserver.HttpServer.create(
                    new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), Integer.parseInt(args[2])), 16);
            http.createContext("/metrics", ex -> {
                byte[] body = ("# TYPE scale_ops_total counter\nscale_ops_total " + OPS.sum() + "\n")
                        .getBytes(java.nio.charset.StandardCharsets.UTF_8);
                ex.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4");
                ex.sendResponseHeaders(200, body.length);
                try (java.io.OutputStream out = ex.getResponseBody()) {
                    out.write(body);
                }
            });
            http.start();
        }
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
