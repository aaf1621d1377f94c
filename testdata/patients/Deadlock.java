// A Java patient that deadlocks in one of three ways, chosen by its
// argument; it prints "ready" as it starts and "stuck PID" once its two
// threads are blocked:
//   monitor    two threads take two monitors (synchronized) in opposite order
//   reentrant  the same with java.util.concurrent.locks.ReentrantLock
//   clinit     two threads initialise two classes whose static
//              initialisers need each other
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.ReentrantLock;

public class Deadlock {
    static final Object lockA = new Object();
    static final Object lockB = new Object();
    static final ReentrantLock relA = new ReentrantLock();
    static final ReentrantLock relB = new ReentrantLock();
    static final CountDownLatch bothHold = new CountDownLatch(2);

    static void pause() {
        bothHold.countDown();
        try { bothHold.await(); } catch (InterruptedException e) { }
    }

    static void monitorAB() { synchronized (lockA) { pause(); synchronized (lockB) { } } }
    static void monitorBA() { synchronized (lockB) { pause(); synchronized (lockA) { } } }

    static void reentrantAB() { relA.lock(); try { pause(); relB.lock(); relB.unlock(); } finally { relA.unlock(); } }
    static void reentrantBA() { relB.lock(); try { pause(); relA.lock(); relA.unlock(); } finally { relB.unlock(); } }

    static class InitA { static final int V; static { pause(); V = InitB.V + 1; } }
    static class InitB { static final int V; static { pause(); V = InitA.V + 1; } }
    static void initA() { System.out.println(InitA.V); }
    static void initB() { System.out.println(InitB.V); }

    static boolean blocked(Thread t) {
        Thread.State s = t.getState();
        if (s == Thread.State.BLOCKED || s == Thread.State.WAITING) {
            return true;
        }
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getMethodName().equals("<clinit>")) {
                return s == Thread.State.RUNNABLE && t.getStackTrace().length > 0 && t.getStackTrace()[0].getMethodName().equals("<clinit>");
            }
        }
        return false;
    }

    public static void main(String[] args) throws Exception {
        String mode = args.length > 0 ? args[0] : "monitor";
        Runnable ab, ba;
        switch (mode) {
            case "reentrant": ab = Deadlock::reentrantAB; ba = Deadlock::reentrantBA; break;
            case "clinit": ab = Deadlock::initA; ba = Deadlock::initB; break;
            default: ab = Deadlock::monitorAB; ba = Deadlock::monitorBA;
        }
        System.out.println("ready");
        Thread t1 = new Thread(ab, "transfer-ab");
        Thread t2 = new Thread(ba, "transfer-ba");
        t1.setDaemon(true);
        t2.setDaemon(true);
        t1.start();
        t2.start();
        while (bothHold.getCount() > 0) {
            Thread.sleep(10);
        }
        // past the latch each thread blocks at once (a thread waiting for a
        // class's initialisation stays RUNNABLE, so its state cannot tell)
        long deadline = System.currentTimeMillis() + 2000;
        while (System.currentTimeMillis() < deadline && (!blocked(t1) || !blocked(t2))) {
            Thread.sleep(10);
        }
        System.out.println("stuck " + ProcessHandle.current().pid());
        t1.join();
    }
}
