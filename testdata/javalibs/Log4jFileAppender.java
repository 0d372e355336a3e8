// testjvm:jars=log4j-api,log4j-core
// Workload: Apache Log4j 2 with a synchronous file appender under concurrent
// loggers.
//
// N threads "logger-1".."logger-N" (arg1, default 16) log INFO messages as
// fast as they can through one synchronous (not async) RollingFile appender
// that flushes every event, writing app.log in the JVM's working directory
// (a per-test temp dir). Each event is written under the file manager's
// monitor, so at any instant most loggers are BLOCKED entering it. The file
// rolls over at 8 MB and keeps one old file: the loggers write tens of MB a
// second, and a test must not fill the disk.
//
// The configuration is written by the program itself (no classpath
// resources) before Log4j initialises. Prints READY once every logger has
// logged a few events, then "EVENTS <total>" every second, and runs until
// killed.
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

public class Log4jFileAppender {
    static final AtomicLong EVENTS = new AtomicLong();

    static final String CONFIG = String.join("\n",
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
            "<Configuration status=\"warn\">",
            "  <Appenders>",
            "    <RollingFile name=\"file\" fileName=\"app.log\" filePattern=\"app-%i.log\" immediateFlush=\"true\" append=\"false\">",
            "      <PatternLayout pattern=\"%d{ISO8601} [%t] %-5level %logger - %msg%n\"/>",
            "      <SizeBasedTriggeringPolicy size=\"8 MB\"/>",
            "      <DefaultRolloverStrategy max=\"1\"/>",
            "    </RollingFile>",
            "  </Appenders>",
            "  <Loggers>",
            "    <Root level=\"info\"><AppenderRef ref=\"file\"/></Root>",
            "  </Loggers>",
            "</Configuration>",
            "");

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 16;
        Path config = Path.of(System.getProperty("user.dir"), "log4j2-workload.xml");
        Files.writeString(config, CONFIG, StandardCharsets.UTF_8);
        System.setProperty("log4j2.configurationFile", config.toString());
        // Synchronous all the way: no async loggers, no thread-local reuse
        // surprises from a context selector set elsewhere.
        System.setProperty("log4j2.contextSelector", "org.apache.logging.log4j.core.selector.ClassLoaderContextSelector");
        Logger log = LogManager.getLogger("workload");
        CountDownLatch warm = new CountDownLatch(n);
        for (int i = 1; i <= n; i++) {
            final int id = i;
            Thread t = new Thread(() -> logLoop(log, id, warm), "logger-" + i);
            t.setDaemon(true);
            t.start();
        }
        warm.await();
        System.out.println("READY");
        while (true) {
            Thread.sleep(1000);
            System.out.println("EVENTS " + EVENTS.get());
        }
    }

    static void logLoop(Logger log, int id, CountDownLatch warm) {
        for (long k = 0; ; k++) {
            log.info("event {} from logger {}", k, id);
            EVENTS.incrementAndGet();
            if (k == 5) {
                warm.countDown();
            }
        }
    }
}
