// testjvm:jars=logback-classic,logback-core,slf4j-api
// Workload: Logback with a synchronous file appender under concurrent
// loggers, plus an AsyncAppender that is idle most of the time.
//
// Logback is configured by the program itself (LoggerContext.reset, then
// appenders built in code; no logback.xml on the class path):
// - the root logger (INFO) writes through one synchronous FileAppender
//   ("file", immediateFlush) to app.log in the JVM's working directory (a
//   per-test temp dir). OutputStreamAppender.writeBytes writes and flushes
//   every event under the appender's streamWriteLock (a ReentrantLock).
// - the logger "audit" (not additive) goes to an AsyncAppender
//   ("audit-async") in front of a second FileAppender (audit.log). Its worker
//   thread "AsyncAppender-Worker-audit-async" takes events from its queue.
//
// Threads, and what each does at any instant:
// - "logger-1".."logger-N" (arg1, default 16) log INFO events to the root
//   logger as fast as they can: one holds streamWriteLock (RUNNABLE in the
//   write/flush), most of the others are parked in ReentrantLock.lock under
//   OutputStreamAppender.writeBytes, waiting for the appender's lock: the
//   contended resource. A few are RUNNABLE formatting their next event.
// - "audit" logs one event every 100 ms (arg2) to the audit logger and
//   sleeps in between.
// - "AsyncAppender-Worker-audit-async": Logback's worker, parked in its
//   queue's take() waiting for the next event nearly all the time: idle.
// - "truncator": keeps app.log and audit.log bounded. Every second it
//   truncates a file that has grown past 8 MB to zero length through its own
//   file channel. The appenders open their files in append mode (O_APPEND),
//   so their next write simply lands at the new end; the truncator takes no
//   Logback lock and does not disturb the loggers' convoy. It sleeps in
//   between.
//
// Prints READY once every logger has logged a few events, then
// "EVENTS <total> AUDIT <total>" every second, and runs until killed.
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import ch.qos.logback.classic.AsyncAppender;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.FileAppender;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class LogbackFileAppender {
    static final AtomicLong EVENTS = new AtomicLong();
    static final AtomicLong AUDITS = new AtomicLong();
    static final long MAX_BYTES = 8L << 20;

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 16;
        long auditMillis = args.length > 1 ? Long.parseLong(args[1]) : 100;
        Path dir = Path.of(System.getProperty("user.dir"));
        Path appLog = dir.resolve("app.log");
        Path auditLog = dir.resolve("audit.log");

        LoggerContext ctx = (LoggerContext) LoggerFactory.getILoggerFactory();
        ctx.reset();
        FileAppender<ILoggingEvent> file = fileAppender(ctx, "file", appLog);
        ch.qos.logback.classic.Logger root = ctx.getLogger(Logger.ROOT_LOGGER_NAME);
        root.setLevel(Level.INFO);
        root.addAppender(file);

        FileAppender<ILoggingEvent> auditFile = fileAppender(ctx, "audit-file", auditLog);
        AsyncAppender async = new AsyncAppender();
        async.setContext(ctx);
        async.setName("audit-async");
        async.addAppender(auditFile);
        async.start();
        ch.qos.logback.classic.Logger audit = ctx.getLogger("audit");
        audit.setAdditive(false);
        audit.setLevel(Level.INFO);
        audit.addAppender(async);

        Thread truncator = new Thread(() -> truncate(appLog, auditLog), "truncator");
        truncator.setDaemon(true);
        truncator.start();

        Thread auditor = new Thread(() -> audit(audit, auditMillis), "audit");
        auditor.setDaemon(true);
        auditor.start();

        Logger log = LoggerFactory.getLogger("workload");
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
            System.out.println("EVENTS " + EVENTS.get() + " AUDIT " + AUDITS.get());
        }
    }

    static FileAppender<ILoggingEvent> fileAppender(LoggerContext ctx, String name, Path path) {
        PatternLayoutEncoder enc = new PatternLayoutEncoder();
        enc.setContext(ctx);
        enc.setPattern("%d{ISO8601} [%thread] %-5level %logger - %msg%n");
        enc.start();
        FileAppender<ILoggingEvent> a = new FileAppender<>();
        a.setContext(ctx);
        a.setName(name);
        a.setFile(path.toString());
        a.setAppend(true); // O_APPEND: see the truncator
        a.setImmediateFlush(true);
        a.setEncoder(enc);
        a.start();
        return a;
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

    static void audit(Logger audit, long millis) {
        for (long k = 0; ; k++) {
            audit.info("audit record {}", k);
            AUDITS.incrementAndGet();
            try {
                Thread.sleep(millis);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    static void truncate(Path... files) {
        while (true) {
            try {
                Thread.sleep(1000);
                for (Path f : files) {
                    if (Files.exists(f) && Files.size(f) > MAX_BYTES) {
                        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE)) {
                            ch.truncate(0);
                        }
                    }
                }
            } catch (InterruptedException e) {
                return;
            } catch (Exception e) {
                e.printStackTrace();
            }
        }
    }
}
