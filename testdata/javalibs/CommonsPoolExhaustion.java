// testjvm:jars=commons-pool2
// Workload: Apache Commons Pool 2 object pool exhaustion.
//
// One GenericObjectPool of "sessions" (a small object standing for an
// expensive resource: a parser, a channel, a client) with maxTotal P (arg2,
// default 3) and blockWhenExhausted with no maxWait (a borrow waits as long
// as it takes). N threads "borrower-1".."borrower-N" (arg1, default 16)
// loop: borrowObject, use the object ~15 ms (Thread.sleep while holding it),
// returnObject. At any instant P borrowers hold an object (asleep in
// Thread.sleep) and the other N-P, about 13, wait for one inside
// GenericObjectPool.borrowObject -> the pool's own
// org.apache.commons.pool2.impl.LinkedBlockingDeque.takeFirst, parked on the
// deque's notEmpty condition until a holder returns its object.
//
// Idle by design:
// - "commons-pool-evictor": the pool's evictor (timeBetweenEvictionRuns
//   5 s; minEvictableIdle 10 min, so it never evicts anything), a
//   ScheduledThreadPoolExecutor worker waiting in DelayedWorkQueue.take for
//   its next run;
// - "stats": the program's own ScheduledThreadPoolExecutor that samples the
//   pool's counters once a second, waiting in DelayedWorkQueue.take between
//   ticks.
//
// Prints READY once every borrower has borrowed once, then "BORROWS <total>
// active <a> waiters <w>" every second (the stats thread's last sample), and
// runs until killed.
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.commons.pool2.BasePooledObjectFactory;
import org.apache.commons.pool2.PooledObject;
import org.apache.commons.pool2.impl.DefaultPooledObject;
import org.apache.commons.pool2.impl.GenericObjectPool;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;

public class CommonsPoolExhaustion {
    static final AtomicLong BORROWS = new AtomicLong();
    static volatile String stats = "active 0 waiters 0";

    /** The pooled resource: expensive to make, used by one thread at a time. */
    static final class Session {
        final int id;
        final byte[] buffer = new byte[64 * 1024];
        long uses;

        Session(int id) {
            this.id = id;
        }
    }

    static final class SessionFactory extends BasePooledObjectFactory<Session> {
        private int next;

        @Override
        public synchronized Session create() {
            return new Session(++next);
        }

        @Override
        public PooledObject<Session> wrap(Session s) {
            return new DefaultPooledObject<>(s);
        }
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 16;
        int size = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        GenericObjectPoolConfig<Session> cfg = new GenericObjectPoolConfig<>();
        cfg.setMaxTotal(size);
        cfg.setMaxIdle(size);
        cfg.setBlockWhenExhausted(true);
        cfg.setMaxWait(Duration.ofMillis(-1)); // wait as long as it takes
        cfg.setTimeBetweenEvictionRuns(Duration.ofSeconds(5));
        cfg.setMinEvictableIdleDuration(Duration.ofMinutes(10));
        GenericObjectPool<Session> pool = new GenericObjectPool<>(new SessionFactory(), cfg);

        ScheduledExecutorService statsExec = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "stats");
            t.setDaemon(true);
            return t;
        });
        statsExec.scheduleAtFixedRate(
                () -> stats = "active " + pool.getNumActive() + " waiters " + pool.getNumWaiters(),
                1, 1, TimeUnit.SECONDS);

        CountDownLatch warm = new CountDownLatch(n);
        for (int i = 1; i <= n; i++) {
            Thread t = new Thread(() -> borrow(pool, warm), "borrower-" + i);
            t.setDaemon(true);
            t.start();
        }
        warm.await();
        System.out.println("READY");
        while (true) {
            Thread.sleep(1000);
            System.out.println("BORROWS " + BORROWS.get() + " " + stats);
        }
    }

    static void borrow(GenericObjectPool<Session> pool, CountDownLatch warm) {
        boolean counted = false;
        try {
            while (true) {
                Session s = pool.borrowObject();
                try {
                    s.uses++;
                    s.buffer[(int) (s.uses % s.buffer.length)]++;
                    // Hold the object as a request would while it works.
                    Thread.sleep(15);
                } finally {
                    pool.returnObject(s);
                }
                BORROWS.incrementAndGet();
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
