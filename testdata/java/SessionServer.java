import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;

// Scenario: the market-data story. A server runs a fixed number of threads
// per connected client, and most of them poll: they wait on one shared
// monitor with a 50 ms timeout and go back to waiting, doing nothing.
//
// Listens on 127.0.0.1 (an ephemeral port, printed as "PORT <n>"), then
// prints READY. For the c-th accepted connection (1-based) it starts
// THREADS_PER_CLIENT threads (arg1, default 21): "sess-<c>-reader", which
// blocks reading the socket until the client closes, and THREADS_PER_CLIENT-1
// pollers "sess-<c>-poll-<i>" that loop in
//   synchronized (BOARD) { BOARD.wait(50); }
// (TIMED_WAITING on object monitor SessionServer$Board in
// SessionServer.poll <- SessionServer.pollLoop). Names stay under 16
// characters so /proc shows them whole. Runs until killed.
public class SessionServer {
    static final class Board {
    }

    static final Board BOARD = new Board();

    static void poll() throws InterruptedException {
        synchronized (BOARD) {
            BOARD.wait(50);
        }
    }

    static void pollLoop(Socket s) {
        try {
            while (!s.isClosed()) {
                poll();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void readLoop(Socket s) {
        byte[] buf = new byte[256];
        try (InputStream in = s.getInputStream()) {
            while (in.read(buf) >= 0) {
                // the client sends nothing; read returns -1 when it closes
            }
        } catch (IOException e) {
            // the client went away
        } finally {
            try {
                s.close();
            } catch (IOException e) {
                // already closed
            }
        }
    }

    public static void main(String[] args) throws Exception {
        int perClient = args.length > 0 ? Integer.parseInt(args[0]) : 21;
        ServerSocket server = new ServerSocket(0, 200, InetAddress.getLoopbackAddress());
        System.out.println("PORT " + server.getLocalPort());
        System.out.println("READY");
        System.out.flush();
        int c = 0;
        while (true) {
            Socket s = server.accept();
            c++;
            Thread reader = new Thread(() -> readLoop(s), "sess-" + c + "-reader");
            reader.setDaemon(true);
            reader.start();
            for (int i = 1; i < perClient; i++) {
                Thread p = new Thread(() -> pollLoop(s), "sess-" + c + "-poll-" + i);
                p.setDaemon(true);
                p.start();
            }
        }
    }
}
