// testjvm:jars=tomcat-jdbc,tomcat-juli,h2
// Workload: the Tomcat JDBC connection pool (tomcat-jdbc 11) exhausted, over
// an in-memory H2 database.
//
// One pool of P connections (arg2, default 4; fairQueue, the default, so
// borrowers queue in its FairBlockingQueue), with its pool cleaner on (idle
// connections tested and evicted every second: timeBetweenEvictionRunsMillis,
// testWhileIdle). N threads "worker-1".."worker-N" (arg1, default 20) loop:
// getConnection, run a small query, hold the connection ~20 ms (Thread.sleep
// while holding it), close it. At any instant P workers hold a connection
// (asleep) and the other N-P, about 16, wait for one inside
// ConnectionPool.borrowConnection -> FairBlockingQueue.poll, each parked on
// its own latch until a holder hands it a connection. maxWait is 10
// minutes, so no borrow times out.
//
// The pool's own thread: "Tomcat JDBC Pool Cleaner[...]", a java.util.Timer
// whose PoolCleaner task runs each second, waits in TimerThread.mainLoop for
// the next run: idle.
//
// Prints READY once every worker has run a query, then "QUERIES <total>
// waiting <n>" every second (n = the pool's own count of waiting threads),
// and runs until killed.
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.tomcat.jdbc.pool.DataSource;
import org.apache.tomcat.jdbc.pool.PoolProperties;

public class TomcatJdbcPoolExhaustion {
    static final AtomicLong QUERIES = new AtomicLong();

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 20;
        int size = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        PoolProperties p = new PoolProperties();
        p.setName("tomcat-pool");
        p.setUrl("jdbc:h2:mem:tomcat;DB_CLOSE_DELAY=-1");
        p.setDriverClassName("org.h2.Driver");
        p.setUsername("sa");
        p.setPassword("");
        p.setMaxActive(size);
        p.setMaxIdle(size);
        p.setMinIdle(size);
        p.setInitialSize(size);
        p.setFairQueue(true);
        p.setMaxWait(600_000);
        p.setTestWhileIdle(true);
        p.setValidationQuery("SELECT 1");
        p.setTimeBetweenEvictionRunsMillis(1000);
        p.setMinEvictableIdleTimeMillis(60_000);
        DataSource ds = new DataSource(p);
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
            System.out.println("QUERIES " + QUERIES.get() + " waiting " + ds.getWaitCount());
        }
    }

    static void work(DataSource ds, int id, CountDownLatch warm) {
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
