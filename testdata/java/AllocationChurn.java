import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;

// Scenario: threads that only allocate short-lived garbage, so the young
// generation fills every few milliseconds and the JVM stops at a safepoint
// for each collection. Nothing of the program's own is contended: any lock
// or futex a profiler reports here comes from the JVM (its safepoint
// barrier, its Heap_lock) or from the profiler.
//
// N threads ("alloc-1" .. "alloc-N", arg1, default 4) loop in
// AllocationChurn.churn(), allocating 4 KiB arrays and keeping the last one
// in a volatile field. The main thread prints "collections <n>" (the GC
// count of every collector, summed) about every 200 ms. Prints READY once
// the first collection has happened, then runs until killed.
public class AllocationChurn {
    static volatile Object sink;

    static void churn() {
        while (true) {
            sink = new byte[4096];
        }
    }

    static long collections() {
        long n = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            n += Math.max(0, gc.getCollectionCount());
        }
        return n;
    }

    public static void main(String[] args) throws InterruptedException {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        for (int i = 1; i <= n; i++) {
            Thread t = new Thread(AllocationChurn::churn, "alloc-" + i);
            t.setDaemon(true);
            t.start();
        }
        while (collections() == 0) {
            Thread.sleep(10);
        }
        System.out.println("READY");
        while (true) {
            System.out.println("collections " + collections());
            Thread.sleep(200);
        }
    }
}
