// testjvm:min-jdk=22
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.atomic.AtomicLong;

// Scenario: virtual threads pinned to their carrier while blocked with a
// native frame on their stack (jdk.VirtualThreadPinned), JDK 22+.
//
// N virtual threads "vt-pinned-1".."vt-pinned-N" (arg1, default 2) loop in
// JfrPinned.sortInNative(): each calls the C library's qsort through the
// Foreign Function API on a two-element array, with a Java comparator (an
// upcall) that sleeps ~2 ms. A virtual thread cannot unmount while a native
// frame is on its stack, so every sleep pins its carrier; since JDK 24 (JEP
// 491) synchronized no longer pins, native code still does.
//
// Every 100 ms the main thread prints "PINNED <sleeps so far>"; READY once
// the first sleeps happened. Runs until killed.
public class JfrPinned {
    static final AtomicLong SLEEPS = new AtomicLong();
    static MethodHandle qsort;
    static MemorySegment comparator;

    static int compare(MemorySegment a, MemorySegment b) {
        try {
            Thread.sleep(2);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        SLEEPS.incrementAndGet();
        return Integer.compare(a.get(ValueLayout.JAVA_INT, 0), b.get(ValueLayout.JAVA_INT, 0));
    }

    static void sortInNative() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment array = arena.allocate(ValueLayout.JAVA_INT, 2);
            while (!Thread.currentThread().isInterrupted()) {
                array.setAtIndex(ValueLayout.JAVA_INT, 0, 2);
                array.setAtIndex(ValueLayout.JAVA_INT, 1, 1);
                qsort.invokeExact(array, 2L, 4L, comparator);
            }
        } catch (Throwable e) {
            throw new RuntimeException(e);
        }
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        Linker linker = Linker.nativeLinker();
        qsort = linker.downcallHandle(linker.defaultLookup().find("qsort").orElseThrow(),
                FunctionDescriptor.ofVoid(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
        ValueLayout.OfInt elem = ValueLayout.JAVA_INT;
        MethodHandle cmp = MethodHandles.lookup().findStatic(JfrPinned.class, "compare",
                MethodType.methodType(int.class, MemorySegment.class, MemorySegment.class));
        FunctionDescriptor cmpDesc = FunctionDescriptor.of(ValueLayout.JAVA_INT,
                ValueLayout.ADDRESS.withTargetLayout(elem), ValueLayout.ADDRESS.withTargetLayout(elem));
        comparator = linker.upcallStub(cmp, cmpDesc, Arena.global());
        Thread.Builder builder = Thread.ofVirtual().name("vt-pinned-", 1);
        for (int i = 0; i < n; i++) {
            builder.start(JfrPinned::sortInNative);
        }
        boolean ready = false;
        while (true) {
            long s = SLEEPS.get();
            if (!ready && s > 0) {
                ready = true;
                System.out.println("READY");
            }
            System.out.println("PINNED " + s);
            System.out.flush();
            Thread.sleep(100);
        }
    }
}
