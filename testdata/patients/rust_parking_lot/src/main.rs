// rust_parking_lot: a thread re-locks a parking_lot::Mutex it holds
// (parking_lot's Mutex is not re-entrant; its ReentrantMutex would have
// been). Thread "cache-worker" calls Cache::update, which locks the
// cache's mutex and, through Cache::evict, locks it again. parking_lot
// records no owner; the waiter parks in parking_lot_core (a futex wait on
// its thread's parker, not on the lock word).
//
// Prints "worker=<tid>" before "ready".
//
// Expected stack (innermost first): futex wait ← parking_lot_core::
// thread_parker::…::ThreadParker::futex_wait / park ← parking_lot_core::
// parking_lot::park ← parking_lot::raw_mutex::RawMutex::lock_slow ←
// lock_api::mutex::Mutex::lock ← rust_parking_lot::Cache::evict ←
// rust_parking_lot::Cache::update ← … ← start_thread.
// Expected verdict: self-deadlock naming the worker.

#[path = "../../rust_patient.rs"]
mod patient;

use parking_lot::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

struct Cache {
    entries: Mutex<Vec<u64>>,
}

static WORKER: AtomicI32 = AtomicI32::new(0);

impl Cache {
    #[inline(never)]
    fn evict(&self, n: u64) -> usize {
        let mut e = self.entries.lock(); // for ever: update holds it
        e.retain(|&v| v != n);
        e.len()
    }

    #[inline(never)]
    fn update(&self, v: u64) -> usize {
        let mut e = self.entries.lock();
        e.push(v);
        WORKER.store(patient::gettid(), Ordering::SeqCst);
        self.evict(v + 1)
    }
}

fn main() {
    let cache: &'static Cache = Box::leak(Box::new(Cache { entries: Mutex::new(Vec::new()) }));
    let w = std::thread::Builder::new().name("cache-worker".into()).spawn(move || cache.update(1)).unwrap();
    let mut tid = 0;
    while tid == 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
        tid = WORKER.load(Ordering::SeqCst);
    }
    patient::wait_blocked(&[tid], patient::SYS_FUTEX);
    patient::say(&format!("worker={tid}\nready\n"));
    let _ = w.join(); // for ever
}
