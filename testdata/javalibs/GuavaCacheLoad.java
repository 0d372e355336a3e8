// testjvm:jars=guava,failureaccess
// Workload: Guava LoadingCache (CacheBuilder), many getters of a few hot keys
// whose values expire almost as soon as they are loaded, so getters keep
// waiting for another thread's load of the same key; plus an idle executor.
//
// The cache (CacheBuilder.newBuilder().expireAfterWrite(E ms).build(loader))
// has a loader that takes L ms (arg3, default 20; a Thread.sleep standing
// for a slow backend) and values that expire E ms after they are written
// (arg4, default 2). N threads "getter-1".."getter-N" (arg1, default 16) loop
// on one of K keys (arg2, default 2; getter i uses key i mod K): get(key),
// then T ms (arg5, default 1) of think time, a Thread.sleep standing for the
// work done with the value. When a key's value has expired, the first getter
// to get it installs a LoadingValueReference under the segment lock and runs
// the loader outside it; every other getter of that key finds the loading
// reference and parks in LocalCache$LoadingValueReference.waitForValue on
// its future (Guava's AbstractFuture.get) until the load ends. A value lives
// E ms, far shorter than a load, so at any instant about K getters are
// loading (TIMED_WAITING in Thread.sleep inside the loader) and most of the
// other N-K are parked in waitForValue: the contended resource is the
// loading key (its loading future). A few getters are in their think time
// (sleeping), and for a moment after a value expires some may queue on the
// segment's lock (a ReentrantLock) in lockedGetOrLoad to find the load in
// progress. The think time keeps the getters from spinning on cache hits:
// spinning getters would starve the CPUs, and every segment-lock handoff
// would then wait for a CPU, turning that moment into a long convoy.
//
// "refresher-1".."refresher-4": an Executors.newFixedThreadPool(4) with all
// its core threads started. Once a second the main thread hands it one short
// task (cache.cleanUp() and a size read), so its workers are parked in the
// pool's getTask, waiting for work, at nearly every instant: idle.
//
// Prints READY once every getter has had a value, then
// "GETS <total> LOADS <total> SIZE <n>" every second, and runs until killed.
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import com.google.common.cache.CacheBuilder;
import com.google.common.cache.CacheLoader;
import com.google.common.cache.LoadingCache;

public class GuavaCacheLoad {
    static final AtomicLong GETS = new AtomicLong();
    static final AtomicLong LOADS = new AtomicLong();
    static volatile long size;

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 16;
        int keys = args.length > 1 ? Integer.parseInt(args[1]) : 2;
        long loadMillis = args.length > 2 ? Long.parseLong(args[2]) : 20;
        long expireMillis = args.length > 3 ? Long.parseLong(args[3]) : 2;
        long thinkMillis = args.length > 4 ? Long.parseLong(args[4]) : 1;

        LoadingCache<Integer, String> cache = CacheBuilder.newBuilder()
                .expireAfterWrite(expireMillis, TimeUnit.MILLISECONDS)
                .build(new CacheLoader<Integer, String>() {
                    @Override
                    public String load(Integer key) throws Exception {
                        return GuavaCacheLoad.load(key, loadMillis);
                    }
                });

        AtomicInteger ids = new AtomicInteger();
        ThreadPoolExecutor refreshers = (ThreadPoolExecutor) Executors.newFixedThreadPool(4, r -> {
            Thread t = new Thread(r, "refresher-" + ids.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        refreshers.prestartAllCoreThreads();

        CountDownLatch warm = new CountDownLatch(n);
        for (int i = 1; i <= n; i++) {
            final int key = i % keys;
            Thread t = new Thread(() -> get(cache, key, thinkMillis, warm), "getter-" + i);
            t.setDaemon(true);
            t.start();
        }
        warm.await();
        System.out.println("READY");
        while (true) {
            Thread.sleep(1000);
            refreshers.execute(() -> {
                cache.cleanUp();
                size = cache.size();
            });
            System.out.println("GETS " + GETS.get() + " LOADS " + LOADS.get() + " SIZE " + size);
        }
    }

    // The slow backend behind the cache.
    static String load(int key, long millis) throws InterruptedException {
        Thread.sleep(millis);
        return "value-" + key + "-" + LOADS.incrementAndGet();
    }

    static void get(LoadingCache<Integer, String> cache, int key, long thinkMillis, CountDownLatch warm) {
        boolean counted = false;
        while (true) {
            String v = cache.getUnchecked(key);
            if (v == null) {
                throw new IllegalStateException("no value for " + key);
            }
            GETS.incrementAndGet();
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
