import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;

// Scenario: an application that logs continuously to stdout, so a dump
// triggered with SIGQUIT (kill -3) lands in the middle of ordinary log output.
//
// After READY, the main thread loops in LogNoise.emit(), writing one burst of
// log lines about every 20 ms. The lines are chosen to look like parts of a
// thread dump without being one:
//   - timestamped lines with "quoted" text and thread-name-like brackets,
//   - a logged exception whose stack lines start with a tab and "at ",
//   - a line that starts with a double quote and contains "#",
//   - a line that mentions java.lang.Thread.State.
// A worker thread "log-worker" sleeps in LogNoise.backgroundWork() so the dump
// has at least one application thread besides main.
//
// Runs until killed.
public class LogNoise {
    static final DateTimeFormatter TS = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSS");

    static void backgroundWork() {
        while (true) {
            try {
                Thread.sleep(60_000);
            } catch (InterruptedException e) {
                // Stay put until killed.
            }
        }
    }

    static void emit(long seq) {
        String ts = LocalDateTime.now().format(TS);
        StringBuilder b = new StringBuilder();
        b.append(ts).append(" INFO  [http-nio-8080-exec-").append(seq % 10)
                .append("] c.e.shop.OrderService - handled \"GET /orders/").append(seq)
                .append("\" status=200 user=\"alice\" took=").append(seq % 97).append("ms\n");
        if (seq % 5 == 0) {
            b.append(ts).append(" WARN  [pool-1-thread-1] c.e.shop.Retry - retrying \"payment\" call, attempt ")
                    .append(seq % 3 + 1).append('\n');
        }
        if (seq % 10 == 0) {
            b.append(ts).append(" ERROR [main] c.e.shop.Gateway - request failed\n");
            b.append("java.lang.IllegalStateException: upstream said \"no\"\n");
            b.append("\tat com.example.shop.Gateway.call(Gateway.java:42)\n");
            b.append("\tat com.example.shop.OrderService.place(OrderService.java:17)\n");
            b.append("\t... 12 more\n");
        }
        if (seq % 25 == 0) {
            b.append("\"not-a-thread\" #").append(seq).append(" is just a log line that starts with a quote\n");
            b.append(ts).append(" DEBUG [main] c.e.Health - java.lang.Thread.State: RUNNABLE (quoted from a log)\n");
        }
        System.out.print(b);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        Thread worker = new Thread(LogNoise::backgroundWork, "log-worker");
        worker.start();
        System.out.println("READY");
        System.out.flush();
        for (long seq = 1; ; seq++) {
            emit(seq);
            Thread.sleep(20);
        }
    }
}
