// rust_rwlock_reread: a recursive read of std::sync::RwLock behind a
// waiting writer. Thread "reader" read-locks CACHE and, still holding
// the guard, read-locks it again after thread "writer" has begun to wait
// for the write lock: Rust's futex RwLock makes new readers wait while a
// writer waits, so the reader waits behind the writer, which waits for
// the reader. main waits in join.
//
// Built with rustc -g -O. Prints "reader=<tid>" and "writer=<tid>"
// before "ready".
//
// Expected stacks (innermost first): reader: futex wait ← … ←
// RwLock::read_contended ← RwLock::read ← rust_rwlock_reread::lookup;
// writer: futex wait ← … ← RwLock::write_contended ← RwLock::write.
// Expected verdict: self-deadlock (low) naming both.

#[path = "rust_patient.rs"]
mod patient;

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::RwLock;

static CACHE: RwLock<u64> = RwLock::new(0);
static READER: AtomicI32 = AtomicI32::new(0);
static WRITER: AtomicI32 = AtomicI32::new(0);
static GO: AtomicBool = AtomicBool::new(false);

#[inline(never)]
fn lookup() -> u64 {
    let outer = CACHE.read().unwrap();
    READER.store(patient::gettid(), Ordering::SeqCst);
    while !GO.load(Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let inner = CACHE.read().unwrap(); // for ever: a writer waits
    *outer + *inner
}

#[inline(never)]
fn refresh() {
    WRITER.store(patient::gettid(), Ordering::SeqCst);
    let mut w = CACHE.write().unwrap(); // for ever: the reader holds it
    *w += 1;
}

fn main() {
    let r = std::thread::Builder::new().name("reader".into()).spawn(lookup).unwrap();
    while READER.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let w = std::thread::Builder::new().name("writer".into()).spawn(refresh).unwrap();
    while WRITER.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let (a, b) = (READER.load(Ordering::SeqCst), WRITER.load(Ordering::SeqCst));
    patient::wait_blocked(&[b], patient::SYS_FUTEX);
    GO.store(true, Ordering::SeqCst);
    patient::wait_blocked(&[a, b], patient::SYS_FUTEX);
    patient::say(&format!("reader={a}\nwriter={b}\nready\n"));
    let _ = r.join(); // for ever
    let _ = w.join();
}
