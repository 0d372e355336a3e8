// Scenario: long garbage collection pauses. The program builds a live set
// of small linked objects, then thread "collector" calls System.gc() in a
// loop: with the serial collector (testjvm's default) each is a full
// collection that marks and compacts the whole live set with every Java
// thread stopped, and the JVM is in one almost all the time.
//
// The promise to the tests is a collection of over a second, and how long
// a live set takes to collect depends on the machine: the program grows
// the live set until one measured collection takes at least arg1
// milliseconds (default 1500), or the live set reaches about 1.4 GB
// (testjvm runs it with a heap of 2 GB, scenarioFlags). Prints
// "GC <ms>" after each collection, READY once the live set is built, then
// runs until killed.
import java.util.ArrayList;
import java.util.List;

public class LongGCPause {
    // One reference and nothing else: 16 bytes with compressed pointers,
    // so the most objects (the collector's cost) per byte of heap.
    static final class Node {
        Node next;

        Node(Node next) {
            this.next = next;
        }
    }

    static final long NODE_BYTES = 16;
    static final long MAX_LIVE_BYTES = 1400L << 20;
    static final List<Node[]> live = new ArrayList<>();

    // grow adds n nodes in many short chains, so that marking does not
    // recurse deep.
    static void grow(long n) {
        Node[] roots = new Node[1024];
        for (long k = 0; k < n; k++) {
            int r = (int) (k & 1023);
            roots[r] = new Node(roots[r]);
        }
        live.add(roots);
    }

    static long collect() {
        long s = System.nanoTime();
        System.gc();
        long ms = (System.nanoTime() - s) / 1_000_000;
        System.out.println("GC " + ms);
        return ms;
    }

    public static void main(String[] args) throws Exception {
        long targetMs = args.length > 0 ? Long.parseLong(args[0]) : 1500;
        long nodes = 20_000_000;
        grow(nodes);
        long ms = collect();
        // A collection's time grows about linearly with the live objects:
        // grow by the measured ratio (with a margin), and measure again.
        while (ms < targetMs && nodes * NODE_BYTES < MAX_LIVE_BYTES) {
            long want = (long) (nodes * Math.min(4.0, 1.2 * targetMs / Math.max(ms, 1)));
            long add = Math.min(want, MAX_LIVE_BYTES / NODE_BYTES) - nodes;
            if (add <= 0) {
                break;
            }
            grow(add);
            nodes += add;
            ms = collect();
        }
        System.out.println("LIVE " + nodes + " nodes");
        Thread gc = new Thread(() -> {
            while (true) {
                collect();
            }
        }, "collector");
        gc.start();
        System.out.println("READY");
        gc.join();
    }
}
