// Scenario: long garbage collection pauses. The program builds a live set
// of arg1 million small linked objects (default 20: about 650 MB), then
// thread "collector" calls System.gc() in a loop: with the serial
// collector (testjvm's default) each is a full collection that marks and
// compacts the whole live set with every Java thread stopped, seconds on
// a small machine, and the JVM is in one almost all the time. Prints
// "GC <ms>" after each collection, READY once the live set is built, then
// runs until killed. testjvm runs it with a heap of 2 GB (scenarioFlags).
public class LongGCPause {
    static final class Node {
        Node next;
        long a, b;

        Node(Node next) {
            this.next = next;
        }
    }

    static volatile Object keep;

    public static void main(String[] args) throws Exception {
        int millions = args.length > 0 ? Integer.parseInt(args[0]) : 20;
        // Many short chains rather than one long one, so that marking
        // does not recurse deep.
        Node[] roots = new Node[1024];
        for (int m = 0; m < millions; m++) {
            for (int k = 0; k < 1_000_000; k++) {
                int r = k & 1023;
                roots[r] = new Node(roots[r]);
            }
        }
        keep = roots;
        Thread gc = new Thread(() -> {
            while (true) {
                long s = System.nanoTime();
                System.gc();
                System.out.println("GC " + (System.nanoTime() - s) / 1_000_000);
            }
        }, "collector");
        gc.start();
        System.out.println("READY");
        gc.join();
    }
}
