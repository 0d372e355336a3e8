// testjvm:jars=HikariCP,h2,slf4j-api,slf4j-nop
// Workload: HikariCP connection pool exhaustion over an in-memory H2 database.
//
// One HikariDataSource (pool "hikari", maximumPoolSize = minimumIdle = P,
// arg2, default 4) in front of an in-memory H2 database. N threads
// "worker-1".."worker-N" (arg1, default 24) loop: getConnection, run a small
// query, hold the connection ~20 ms (Thread.sleep while holding it), close
// it (back to the pool). At any instant P workers hold a connection (asleep
// in Thread.sleep) and the other N-P, about 20, wait for one inside
// HikariPool.getConnection -> ConcurrentBag.borrow, parked on the bag's
// SynchronousQueue handoff until a holder returns its connection. The
// connectionTimeout is 10 minutes, far above the waits, so no borrow ever
// times out.
//
// HikariCP's own threads are idle by design: "hikari:housekeeper" (a
// ScheduledThreadPoolExecutor worker waiting in DelayedWorkQueue.take for its
// next 30 s tick) and "hikari:connection-adder" (a ThreadPoolExecutor
// worker waiting in LinkedBlockingQueue.poll for a task: HikariCP hands it an
// add-connection task when a borrower has to wait, which finds the pool at
// its maximum and does nothing, so the thread never times out but spends
// nearly all its time waiting for the next task). A
// "hikari:connection-closer" appears only when a connection is retired,
// which this workload does not do within maxLifetime (30 min). H2's
// in-memory database runs no thread of its own here.
//
// Prints READY once every worker has run a query, then "QUERIES <total>
// waiting <n>" every second (n = HikariCP's own count of threads awaiting a
// connection), and runs until killed.
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

public class HikariPoolExhaustion {
    static final AtomicLong QUERIES = new AtomicLong();

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 24;
        int size = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        HikariConfig cfg = new HikariConfig();
        cfg.setPoolName("hikari");
        cfg.setJdbcUrl("jdbc:h2:mem:hikari;DB_CLOSE_DELAY=-1");
        cfg.setUsername("sa");
        cfg.setPassword("");
        cfg.setMaximumPoolSize(size);
        cfg.setMinimumIdle(size);
        // Far above the workload's waits: a timeout would end a wait the
        // test means to observe.
        cfg.setConnectionTimeout(600_000);
        HikariDataSource ds = new HikariDataSource(cfg);
        try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(32))");
            for (int r = 0; r < 100; r++) {
                s.execute("INSERT INTO items VALUES (" + r + ", 'item " + r + "')");
            }
        }
        CountDownLatch warm = new CountDownLatch(n);
        for (int i = 1; i <= n; i++) {
            final int id = i;
            Thread t = new Thread(() -> work(ds, id, warm), "worker-" + i);
            t.setDaemon(true);
            t.start();
        }
        warm.await();
        System.out.println("READY");
        while (true) {
            Thread.sleep(1000);
            System.out.println("QUERIES " + QUERIES.get() + " waiting "
                    + ds.getHikariPoolMXBean().getThreadsAwaitingConnection());
        }
    }

    static void work(HikariDataSource ds, int id, CountDownLatch warm) {
        boolean counted = false;
        try {
            for (long k = 0; ; k++) {
                try (Connection c = ds.getConnection();
                     PreparedStatement q = c.prepareStatement("SELECT name FROM items WHERE id = ?")) {
                    q.setInt(1, (int) ((id + k) % 100));
                    try (ResultSet rs = q.executeQuery()) {
                        rs.next();
                    }
                    // Hold the connection as a request would while it works.
                    Thread.sleep(20);
                }
                QUERIES.incrementAndGet();
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
