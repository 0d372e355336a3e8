// testjvm:jars=disruptor
// Workload: LMAX Disruptor, producers waiting for capacity on a full ring.
//
// A multi-producer Disruptor with a small ring (arg2 slots, default 64) and
// one slow consumer, "slow-consumer", whose event handler takes about 1 ms
// per event (a Thread.sleep(1) standing for the work; it sleeps outside any
// lock). N producer threads "producer-1".."producer-N" (arg1, default 8)
// publish as fast as they can, so the ring is always full: to claim a slot,
// MultiProducerSequencer.next() (under RingBuffer.next/publishEvent) loops on
// LockSupport.parkNanos(1) until the consumer's sequence moves past the
// wrap point. That park has no blocker object, so a dump shows each waiting
// producer TIMED_WAITING (parking) in Unsafe.park <- LockSupport.parkNanos
// <- MultiProducerSequencer.next, with no "parking to wait for" line; at
// any instant almost all producers are there (each one wakes every ~50 us
// to recheck, so one may be RUNNABLE in next() now and then). The resource
// they wait for is the ring's capacity (the slow consumer's progress).
// The slow ring uses SleepingWaitStrategy, whose publish side takes no lock,
// so the producers contend on nothing else.
//
// A second Disruptor (ring of 16, BlockingWaitStrategy) has two consumers,
// "idle-consumer-1" and "idle-consumer-2", and gets one event a second from
// the main thread: between events both consumers are idle by design,
// WAITING (on object monitor) in Object.wait on the strategy's mutex in
// BlockingWaitStrategy.waitFor <- ProcessingSequenceBarrier.waitFor <-
// BatchEventProcessor.processEvents.
//
// The main thread publishes that event, prints "EVENTS <consumed by the slow
// consumer>" every second and sleeps. Prints READY once every producer has
// published and the ring has filled. Runs until killed.
import com.lmax.disruptor.BlockingWaitStrategy;
import com.lmax.disruptor.EventHandler;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.SleepingWaitStrategy;
import com.lmax.disruptor.dsl.Disruptor;
import com.lmax.disruptor.dsl.ProducerType;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

public class DisruptorRingFull {
    static final class Event {
        long value;
    }

    static final AtomicLong CONSUMED = new AtomicLong();
    static final AtomicLong IDLE_SEEN = new AtomicLong();

    // Names the threads a Disruptor starts: "name" for one, "name-1".. for several.
    static ThreadFactory named(String name, boolean numbered) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, numbered ? name + "-" + n.incrementAndGet() : name);
            t.setDaemon(true);
            return t;
        };
    }

    public static void main(String[] args) throws Exception {
        int producers = args.length > 0 ? Integer.parseInt(args[0]) : 8;
        int ring = args.length > 1 ? Integer.parseInt(args[1]) : 64;

        Disruptor<Event> slow = new Disruptor<>(Event::new, ring, named("slow-consumer", false),
                ProducerType.MULTI, new SleepingWaitStrategy());
        slow.handleEventsWith((EventHandler<Event>) (e, seq, end) -> {
            Thread.sleep(1); // ~1 ms of "work" per event
            CONSUMED.incrementAndGet();
        });
        RingBuffer<Event> rb = slow.start();

        Disruptor<Event> quiet = new Disruptor<>(Event::new, 16, named("idle-consumer", true),
                ProducerType.SINGLE, new BlockingWaitStrategy());
        EventHandler<Event> seen = (e, seq, end) -> IDLE_SEEN.incrementAndGet();
        quiet.handleEventsWith(seen, seen);
        RingBuffer<Event> qb = quiet.start();

        CountDownLatch warm = new CountDownLatch(producers);
        for (int i = 1; i <= producers; i++) {
            final long id = i;
            Thread t = new Thread(() -> {
                for (long k = 0; ; k++) {
                    rb.publishEvent((e, seq, v) -> e.value = v, id << 40 | k);
                    if (k == 4) {
                        warm.countDown();
                    }
                }
            }, "producer-" + i);
            t.setDaemon(true);
            t.start();
        }
        warm.await();
        while (rb.remainingCapacity() > 0) {
            Thread.sleep(10);
        }
        System.out.println("READY");
        while (true) {
            qb.publishEvent((e, seq, v) -> e.value = v, System.nanoTime());
            Thread.sleep(1000);
            System.out.println("EVENTS " + CONSUMED.get() + " idle-events " + IDLE_SEEN.get());
        }
    }
}
