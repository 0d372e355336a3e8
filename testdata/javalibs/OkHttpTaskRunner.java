// testjvm:jars=okhttp-jvm,okio-jvm,kotlin-stdlib,netty-common
// Workload: OkHttp 5 clients against a server whose handlers serialize on a
// shared ledger.
//
// The server is the JDK's com.sun.net.httpserver on 127.0.0.1 with a fixed
// pool of H handler threads (arg2, default 8, "handler-1".."handler-H").
// Each request enters the ledger's monitor (LEDGER) and holds it ~10 ms
// (Thread.sleep inside synchronized) before it answers, so at any instant
// one handler holds it and the others, about H-1, are BLOCKED entering it:
// the contention the workload is about.
//
// C client threads (arg1, default 12, "client-1".."client-C") share one
// OkHttpClient (its connection pool keeps up to C idle connections) and
// loop: a synchronous GET, read the body. A client waits for its answer in
// a socket read (RUNNABLE).
//
// OkHttp's own threads: its TaskRunner runs its background tasks (the
// connection pool's cleanup) on a ThreadPoolExecutor of "OkHttp TaskRunner"
// threads. One of them runs the TaskRunner's coordinator, itself a loop
// (TaskRunner$runnable$1.run -> awaitTaskToRun) that waits on the
// TaskRunner for its next task's time: idle at the top of that loop,
// though the executor's worker loop lies below it. Extra TaskRunner threads
// wait in the executor's getTask: idle. Okio's "Okio Watchdog" waits for
// its next timeout: idle.
//
// Each handler also hands an audit record to a Netty event executor
// (two DefaultEventExecutors, netty-common) that run on the program's
// own ThreadPoolExecutor ("audit-1", "audit-2"): Netty's executor loop
// (DefaultEventExecutor.run -> takeTask) is a task of the JDK's worker loop,
// and between records it waits in its task queue for the next one: idle,
// with the JDK's worker loop below it.
//
// Prints READY once every client has had an answer, then "REQUESTS <n>"
// every second, and runs until killed.
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import com.sun.net.httpserver.HttpServer;

import io.netty.util.concurrent.DefaultEventExecutor;

import okhttp3.ConnectionPool;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

public class OkHttpTaskRunner {
    static final Object LEDGER = new Object();
    static final AtomicLong REQUESTS = new AtomicLong();
    static final AtomicLong AUDITED = new AtomicLong();

    public static void main(String[] args) throws Exception {
        int clients = args.length > 0 ? Integer.parseInt(args[0]) : 12;
        int handlers = args.length > 1 ? Integer.parseInt(args[1]) : 8;
        AtomicInteger seq = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(handlers, r -> {
            Thread t = new Thread(r, "handler-" + seq.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        AtomicInteger aseq = new AtomicInteger();
        ExecutorService auditThreads = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "audit-" + aseq.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        DefaultEventExecutor[] audit = {new DefaultEventExecutor(auditThreads), new DefaultEventExecutor(auditThreads)};
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
        server.createContext("/", ex -> {
            try {
                synchronized (LEDGER) {
                    Thread.sleep(10);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            audit[(int) (REQUESTS.get() & 1)].execute(AUDITED::incrementAndGet);
            byte[] body = "ok".getBytes();
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream os = ex.getResponseBody()) {
                os.write(body);
            }
        });
        server.setExecutor(pool);
        server.start();
        String url = "http://127.0.0.1:" + server.getAddress().getPort() + "/";
        OkHttpClient client = new OkHttpClient.Builder()
                .connectionPool(new ConnectionPool(clients, 5, TimeUnit.MINUTES))
                .readTimeout(10, TimeUnit.MINUTES)
                .build();
        CountDownLatch warm = new CountDownLatch(clients);
        for (int i = 1; i <= clients; i++) {
            Thread t = new Thread(() -> call(client, url, warm), "client-" + i);
            t.setDaemon(true);
            t.start();
        }
        warm.await();
        System.out.println("READY");
        while (true) {
            Thread.sleep(1000);
            System.out.println("REQUESTS " + REQUESTS.get() + " AUDITED " + AUDITED.get());
        }
    }

    static void call(OkHttpClient client, String url, CountDownLatch warm) {
        boolean counted = false;
        try {
            while (true) {
                try (Response r = client.newCall(new Request.Builder().url(url).build()).execute()) {
                    r.body().string();
                }
                REQUESTS.incrementAndGet();
                if (!counted) {
                    counted = true;
                    warm.countDown();
                }
            }
        } catch (Exception e) {
            e.printStackTrace();
            System.exit(1);
        }
    }
}
