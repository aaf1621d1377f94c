// rust_recv_hold: a std::sync::Mutex held across a channel receive.
// Thread "receiver" locks STATE and, still holding the guard, waits in
// mpsc::Receiver::recv for a message; thread "sender" must lock STATE
// before it sends, and waits. Rust's futex Mutex records no owner: the
// frames and who waits how are all there is. main waits in join.
//
// Built with rustc -g -O. Prints "receiver=<tid>" and "sender=<tid>"
// before "ready".
//
// Expected stacks (innermost first): receiver: futex wait ← … ←
// Parker::park ← … ← mpsc::Receiver::recv ← rust_recv_hold::receive;
// sender: futex wait ← … ← futex Mutex::lock_contended ← Mutex::lock ←
// rust_recv_hold::send_after_lock.
// Expected verdict: lock-order-cycle (low) naming both: the receiver most
// likely holds the lock the sender waits for.

#[path = "rust_patient.rs"]
mod patient;

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;

static STATE: Mutex<u64> = Mutex::new(0);
static RECEIVER: AtomicI32 = AtomicI32::new(0);
static SENDER: AtomicI32 = AtomicI32::new(0);

#[inline(never)]
fn receive(rx: mpsc::Receiver<u64>, locked: mpsc::Sender<()>) -> u64 {
    let state = STATE.lock().unwrap();
    RECEIVER.store(patient::gettid(), Ordering::SeqCst);
    locked.send(()).unwrap();
    let v = rx.recv().unwrap_or(0); // for ever: the guard is still held
    *state + v
}

#[inline(never)]
fn send_after_lock(tx: mpsc::Sender<u64>) {
    SENDER.store(patient::gettid(), Ordering::SeqCst);
    let mut state = STATE.lock().unwrap(); // for ever
    *state += 1;
    let _ = tx.send(*state);
}

fn main() {
    let (tx, rx) = mpsc::channel::<u64>();
    let (locked_tx, locked_rx) = mpsc::channel::<()>();
    let r = std::thread::Builder::new().name("receiver".into()).spawn(move || receive(rx, locked_tx)).unwrap();
    locked_rx.recv().unwrap(); // the receiver holds STATE
    let s = std::thread::Builder::new().name("sender".into()).spawn(move || send_after_lock(tx)).unwrap();
    let (mut a, mut b) = (0, 0);
    while a == 0 || b == 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
        a = RECEIVER.load(Ordering::SeqCst);
        b = SENDER.load(Ordering::SeqCst);
    }
    patient::wait_blocked(&[a, b], patient::SYS_FUTEX);
    patient::say(&format!("receiver={a}\nsender={b}\nready\n"));
    let _ = r.join(); // for ever
    let _ = s.join();
}
