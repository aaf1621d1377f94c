// rust_relock: the main thread locks a std::sync::Mutex and, through a
// helper, locks it again: std's futex mutex waits forever (a self-deadlock).
// A watcher thread says "ready" once main sleeps in the futex wait.
use std::sync::Mutex;
use std::{fs, thread, time::Duration};

static STATE: Mutex<u64> = Mutex::new(0);

#[inline(never)]
fn inner(n: u64) -> u64 {
    let g = STATE.lock().unwrap();
    *g + n
}

#[inline(never)]
fn outer() -> u64 {
    let mut g = STATE.lock().unwrap();
    *g += 1;
    let v = inner(*g);
    drop(g);
    v
}

fn main() {
    let main_tid = std::process::id();
    thread::Builder::new()
        .name("watcher".into())
        .spawn(move || {
            let path = format!("/proc/self/task/{}/syscall", main_tid);
            loop {
                if let Ok(s) = fs::read_to_string(&path) {
                    if s.starts_with("202 ") {
                        println!("ready");
                        break;
                    }
                }
                thread::sleep(Duration::from_millis(5));
            }
            loop {
                thread::park();
            }
        })
        .unwrap();
    println!("{}", outer());
}
