// testjvm:jars=jetty-server,jetty-http,jetty-io,jetty-util,slf4j-api,slf4j-nop
// Workload: Eclipse Jetty 12 (core API, HTTP/1.1) whose request handler
// serializes on one monitor: a convoy of Jetty's request threads.
//
// The server listens on 127.0.0.1, an ephemeral port, with one acceptor and
// one selector, on a QueuedThreadPool of at most M threads (arg2, default 40)
// with Jetty's default naming: threads "qtp<hashCode>-<id>". Every request
// enters one `synchronized` block on a shared object, holds it ~2 ms (arg3,
// Thread.sleep inside the lock), then answers "ok". N client threads
// "client-1".."client-N" (arg1, default 24) in the same JVM send GETs in a
// loop through one java.net.http.HttpClient (HTTP/1.1, synchronous send), so
// about N requests are in flight at any instant.
//
// At any instant:
// - qtp threads running a request: one holds the lock (TIMED_WAITING in
//   Thread.sleep inside it); most of the others are BLOCKED entering the
//   monitor in JettySyncHandler.serve: the contended resource. A few may be
//   RUNNABLE parsing a request or writing a response.
// - other qtp threads: the acceptor (RUNNABLE in ServerSocketChannel.accept),
//   the selector (RUNNABLE in epoll), Jetty's reserved threads (parked in
//   ReservedThreadExecutor, waiting to be handed a job) and idle pool threads
//   (parked in QueuedThreadPool's idle job poll): idle by design. The pool's
//   maximum is above the number of concurrent requests, so some are idle.
// - "Scheduler-<hash>": Jetty's timer thread, idle between timeouts.
// - client-N: parked in HttpClient.send until the response arrives (a network
//   round trip to the server; the JDK client does the socket I/O on its
//   "HttpClient-1-SelectorManager" thread and completes a future).
// - "HttpClient-1-Worker-K": the JDK client's executor, idle between
//   response-processing tasks (parked in its pool's getTask).
//
// Prints READY once every client has had an answer, then
// "REQUESTS <total> PORT <port>" every second, and runs until killed.
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

public class JettySyncHandler {
    static final AtomicLong REQUESTS = new AtomicLong();
    // The shared object every request serializes on.
    static final Object SHARED = new Object();
    static long served;
    static final byte[] OK = "ok\n".getBytes(StandardCharsets.US_ASCII);

    public static void main(String[] args) throws Exception {
        int clients = args.length > 0 ? Integer.parseInt(args[0]) : 24;
        int maxThreads = args.length > 1 ? Integer.parseInt(args[1]) : 40;
        long holdMillis = args.length > 2 ? Long.parseLong(args[2]) : 2;

        QueuedThreadPool pool = new QueuedThreadPool(maxThreads, 8);
        Server server = new Server(pool);
        ServerConnector connector = new ServerConnector(server, 1, 1);
        connector.setHost("127.0.0.1");
        connector.setPort(0);
        server.addConnector(connector);
        server.setHandler(new Handler.Abstract() {
            // Handler.Abstract is a blocking handler: Jetty runs it on a pool
            // thread, never on the selector.
            @Override
            public boolean handle(Request request, Response response, Callback callback) {
                serve(holdMillis);
                response.setStatus(200);
                response.getHeaders().put(HttpHeader.CONTENT_TYPE, "text/plain");
                response.write(true, ByteBuffer.wrap(OK), callback);
                return true;
            }
        });
        server.start();
        int port = connector.getLocalPort();
        URI uri = URI.create("http://127.0.0.1:" + port + "/work");

        HttpClient client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10))
                .build();
        CountDownLatch warm = new CountDownLatch(clients);
        for (int i = 1; i <= clients; i++) {
            Thread t = new Thread(() -> request(client, uri, warm), "client-" + i);
            t.setDaemon(true);
            t.start();
        }
        warm.await();
        System.out.println("READY");
        while (true) {
            Thread.sleep(1000);
            System.out.println("REQUESTS " + REQUESTS.get() + " PORT " + port);
        }
    }

    // The request's critical section: one request at a time holds SHARED.
    static void serve(long holdMillis) {
        synchronized (SHARED) {
            try {
                Thread.sleep(holdMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            served++;
        }
    }

    static void request(HttpClient client, URI uri, CountDownLatch warm) {
        HttpRequest req = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(60)).GET().build();
        boolean counted = false;
        while (true) {
            try {
                HttpResponse<byte[]> resp = client.send(req, HttpResponse.BodyHandlers.ofByteArray());
                if (resp.statusCode() != 200) {
                    throw new IllegalStateException("status " + resp.statusCode());
                }
                REQUESTS.incrementAndGet();
                if (!counted) {
                    counted = true;
                    warm.countDown();
                }
            } catch (Exception e) {
                e.printStackTrace();
                System.exit(1);
            }
        }
    }
}
