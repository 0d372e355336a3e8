// testjvm:jars=caffeine
// Workload: Caffeine LoadingCache, many readers of a few hot keys whose
// values are retired a couple of milliseconds after they are loaded, so
// readers keep waiting for another thread's load of the same key.
//
// The cache (Caffeine.newBuilder().maximumSize(10000).build(loader): a
// bounded cache, never full here) has a loader that takes L ms (arg3,
// default 20; a Thread.sleep standing for a slow backend). N threads
// "reader-1".."reader-N" (arg1, default 16) loop on one of K keys (arg2,
// default 2; reader i uses key i mod K): get(key), and once the value it got
// is A ms old (arg4, default 2) and still the cached one (getIfPresent, which
// never blocks), removes it (asMap().remove(key, value): a newer value
// stays), standing for hot data that changes all the time, and then thinks
// for T ms (arg5, default 1; a Thread.sleep standing for the work done with
// the value, which also keeps the readers from spinning on cache hits). The
// removal is expireAfterWrite done by the readers: see below why not
// Caffeine's own.
// The first reader to get an absent key runs the loader inside
// ConcurrentHashMap.compute, holding the monitor of the key's hash bin (a
// ReservationNode or the bin's first Node); every other reader of that key
// enters compute too and is BLOCKED on that bin's monitor until the load
// ends. A reader whose remove meets a load that has just begun waits the
// same way, in ConcurrentHashMap.computeIfPresent: at times several do, when
// they come out of their think time as a value turns stale. So at any
// instant about K readers are loading (TIMED_WAITING in Thread.sleep inside
// the loader) and most of the other N-K are BLOCKED in
// ConcurrentHashMap.compute (or computeIfPresent): the contended resource is
// the loading key (its bin's monitor). A few are in their think time
// (sleeping) or RUNNABLE between two calls.
//
// Caffeine runs its maintenance (draining its read/write buffers) on
// ForkJoinPool.commonPool(): the "ForkJoinPool.commonPool-worker-K" threads
// are idle (parked waiting for work) at most instants. The cache has no
// expiry on purpose: with expireAfterWrite, Caffeine's maintenance evicts an
// expired entry while a reader reloads it (BoundedLocalCache.evictEntry,
// ConcurrentHashMap.computeIfPresent), so the commonPool worker would be
// BLOCKED on the loading bin itself most of the time. No Caffeine scheduler
// thread is configured.
//
// Prints READY once every reader has had a value, then
// "GETS <total> LOADS <total>" every second, and runs until killed.
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.LoadingCache;

public class CaffeineSameKeyLoad {
    static final AtomicLong GETS = new AtomicLong();
    static final AtomicLong LOADS = new AtomicLong();

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 16;
        int keys = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        long loadMillis = args.length > 2 ? Long.parseLong(args[2]) : 20;
        long maxAgeNanos = (args.length > 3 ? Long.parseLong(args[3]) : 2) * 1_000_000L;
        long thinkMillis = args.length > 4 ? Long.parseLong(args[4]) : 1;

        LoadingCache<Integer, Value> cache = Caffeine.newBuilder()
                .maximumSize(10_000)
                .build(key -> load(key, loadMillis));

        CountDownLatch warm = new CountDownLatch(n);
        for (int i = 1; i <= n; i++) {
            final int key = i % keys;
            Thread t = new Thread(() -> read(cache, key, maxAgeNanos, thinkMillis, warm), "reader-" + i);
            t.setDaemon(true);
            t.start();
        }
        warm.await();
        System.out.println("READY");
        while (true) {
            Thread.sleep(1000);
            System.out.println("GETS " + GETS.get() + " LOADS " + LOADS.get());
        }
    }

    record Value(int key, long version, long loadedAt) {
    }

    // The slow backend behind the cache.
    static Value load(int key, long millis) throws InterruptedException {
        Thread.sleep(millis);
        return new Value(key, LOADS.incrementAndGet(), System.nanoTime());
    }

    static void read(LoadingCache<Integer, Value> cache, int key, long maxAgeNanos, long thinkMillis,
            CountDownLatch warm) {
        boolean counted = false;
        while (true) {
            Value v = cache.get(key);
            if (v == null) {
                throw new IllegalStateException("no value for " + key);
            }
            GETS.incrementAndGet();
            if (System.nanoTime() - v.loadedAt() >= maxAgeNanos && cache.getIfPresent(key) == v) {
                // Only the value this reader saw: a newer one stays.
                cache.asMap().remove(key, v);
            }
            if (!counted) {
                counted = true;
                warm.countDown();
            }
            think(thinkMillis);
        }
    }

    static void think(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
