// rust_abba: a lock-order inversion between two std::sync::Mutex (Rust's
// standard library: a futex word, no owner recorded). Thread
// "transfer-ab" holds LOCK_A and wants LOCK_B; thread "transfer-ba" holds
// LOCK_B and wants LOCK_A. A Barrier makes sure each holds its first lock
// before either asks for its second. main waits in join.
//
// Built with rustc -g -O. Prints "ab=<tid>" and "ba=<tid>" before "ready".
//
// Expected stacks (innermost first): futex wait ← std::sys::…::futex::
// futex_wait ← std::sys::…::futex_mutex::Mutex::lock_contended ←
// std::sync::Mutex::lock ← rust_abba::take_b_after_a ← … ← start_thread.
// Expected verdict: lock-order-cycle naming both threads.

#[path = "rust_patient.rs"]
mod patient;

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Barrier, Mutex};

static LOCK_A: Mutex<u64> = Mutex::new(0);
static LOCK_B: Mutex<u64> = Mutex::new(0);
static AB: AtomicI32 = AtomicI32::new(0);
static BA: AtomicI32 = AtomicI32::new(0);

#[inline(never)]
fn take_b_after_a(both: &Barrier) -> u64 {
    let a = LOCK_A.lock().unwrap();
    both.wait();
    AB.store(patient::gettid(), Ordering::SeqCst);
    let b = LOCK_B.lock().unwrap(); // for ever
    *a + *b
}

#[inline(never)]
fn take_a_after_b(both: &Barrier) -> u64 {
    let b = LOCK_B.lock().unwrap();
    both.wait();
    BA.store(patient::gettid(), Ordering::SeqCst);
    let a = LOCK_A.lock().unwrap(); // for ever
    *a + *b
}

fn main() {
    let both: &'static Barrier = Box::leak(Box::new(Barrier::new(2)));
    let ab = std::thread::Builder::new().name("transfer-ab".into()).spawn(move || take_b_after_a(both)).unwrap();
    let ba = std::thread::Builder::new().name("transfer-ba".into()).spawn(move || take_a_after_b(both)).unwrap();
    let (mut a, mut b) = (0, 0);
    while a == 0 || b == 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
        a = AB.load(Ordering::SeqCst);
        b = BA.load(Ordering::SeqCst);
    }
    patient::wait_blocked(&[a, b], patient::SYS_FUTEX);
    patient::say(&format!("ab={a}\nba={b}\nready\n"));
    let _ = ab.join(); // for ever
    let _ = ba.join();
}
