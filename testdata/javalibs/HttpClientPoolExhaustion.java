// testjvm:jars=httpclient5,httpcore5,httpcore5-h2,slf4j-api,slf4j-nop
// Workload: Apache HttpClient 5 (classic API) connection pool exhaustion.
//
// A local HTTP server in the same JVM (the JDK's com.sun.net.httpserver on
// 127.0.0.1, ephemeral port) answers every GET after ~20 ms, served by a
// fixed pool of S threads "server-1".."server-S" (arg2, default 8). One
// CloseableHttpClient with a PoolingHttpClientConnectionManager limited to P
// connections (arg3, default 4; per route and in total) is shared by N
// threads "client-1".."client-N" (arg1, default 20) that loop on GETs,
// consuming and closing each response so its connection returns to the
// pool. The connection request timeout is 10 minutes, far above the waits.
//
// At any instant P clients hold a connection (RUNNABLE in the socket read of
// the response, or sending the request) and the other N-P, about 16, wait to
// lease one: PoolingHttpClientConnectionManager's lease -> the pool's lease
// future (StrictConnPool$1.get -> org.apache.hc.core5.concurrent.
// BasicFuture.get, parked on the future's lock condition) until a
// connection is released to the pool (StrictConnPool completes the next
// pending lease). The server is not the bottleneck: it has more threads
// than the client has connections (and TCP_NODELAY, see below).
//
// Threads of the libraries and the JDK server, by design:
// - "server-1".."server-S": the server's executor; P of them at a time
//   handle a request (asleep in the handler's Thread.sleep), the others are
//   idle in ThreadPoolExecutor.getTask waiting for the next exchange;
// - "HTTP-Dispatcher": the JDK server's selector loop (RUNNABLE in epoll;
//   now and then BLOCKED for a moment on the selector's interrupt lock while
//   a server thread wakes the selector up to hand a connection back: that
//   is a short lock wait, not idleness);
// - "idle-timeout-task": the JDK server's java.util.Timer for idle
//   connections, waiting (TimerThread.mainLoop, Object.wait) for its next
//   run;
// - "idle-connection-evictor-1": HttpClient's IdleConnectionEvictor
//   (evictIdleConnections), asleep in Thread.sleep between its runs.
//
// Prints READY once every client has had a response, then
// "REQUESTS <total> leased <l> pending <p>" every second (the pool's own
// totals), and runs until killed.
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManager;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.pool.PoolStats;
import org.apache.hc.core5.util.TimeValue;
import org.apache.hc.core5.util.Timeout;

public class HttpClientPoolExhaustion {
    static final AtomicLong REQUESTS = new AtomicLong();

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 20;
        int serverThreads = args.length > 1 ? Integer.parseInt(args[1]) : 8;
        int conns = args.length > 2 ? Integer.parseInt(args[2]) : 4;

        // TCP_NODELAY on the server's sockets: the JDK server writes the
        // headers and the body separately, and with Nagle's algorithm the
        // body would wait for the client's delayed ACK (~40 ms a response).
        // Read when the server's configuration loads, so set before create.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 128);
        AtomicInteger serverIds = new AtomicInteger();
        ExecutorService serverPool = Executors.newFixedThreadPool(serverThreads, r -> {
            Thread t = new Thread(r, "server-" + serverIds.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(serverPool);
        server.createContext("/", HttpClientPoolExhaustion::handle);
        server.start();
        String uri = "http://127.0.0.1:" + server.getAddress().getPort() + "/item";

        PoolingHttpClientConnectionManager cm = PoolingHttpClientConnectionManagerBuilder.create()
                .setMaxConnTotal(conns)
                .setMaxConnPerRoute(conns)
                .build();
        CloseableHttpClient client = HttpClients.custom()
                .setConnectionManager(cm)
                .setDefaultRequestConfig(RequestConfig.custom()
                        // Far above the workload's waits: a timeout would end
                        // a wait the test means to observe.
                        .setConnectionRequestTimeout(Timeout.ofMinutes(10))
                        .setResponseTimeout(Timeout.ofMinutes(1))
                        .build())
                .evictIdleConnections(TimeValue.ofMinutes(1))
                .build();

        CountDownLatch warm = new CountDownLatch(n);
        for (int i = 1; i <= n; i++) {
            Thread t = new Thread(() -> request(client, uri, warm), "client-" + i);
            t.setDaemon(true);
            t.start();
        }
        warm.await();
        System.out.println("READY");
        while (true) {
            Thread.sleep(1000);
            PoolStats st = cm.getTotalStats();
            System.out.println("REQUESTS " + REQUESTS.get() + " leased " + st.getLeased() + " pending " + st.getPending());
        }
    }

    static void handle(HttpExchange ex) throws IOException {
        try {
            ex.getRequestBody().readAllBytes();
            // The work of a request: slow enough that the client's
            // connections, not the CPU, limit the rate.
            Thread.sleep(20);
            byte[] body = ("item at " + System.nanoTime() + "\n").getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("Content-Type", "text/plain");
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream os = ex.getResponseBody()) {
                os.write(body);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            ex.close();
        }
    }

    static void request(CloseableHttpClient client, String uri, CountDownLatch warm) {
        boolean counted = false;
        try {
            while (true) {
                int code = client.execute(new HttpGet(uri), resp -> {
                    EntityUtils.consume(resp.getEntity());
                    return resp.getCode();
                });
                if (code != 200) {
                    throw new IOException("GET " + uri + ": status " + code);
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
