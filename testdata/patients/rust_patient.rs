// rust_patient: what patient.h is for the C patients, for the Rust ones
// (included with #[path]): the thread's TID, and whether a thread sleeps
// in a given syscall, read from /proc/self. No timing is assumed.

#![allow(dead_code)]

use std::io::Write;

/// x86-64 syscall number of futex(2).
pub const SYS_FUTEX: i64 = 202;

/// The calling thread's TID, from the /proc/thread-self link ("PID/task/TID").
pub fn gettid() -> i32 {
    let link = std::fs::read_link("/proc/thread-self").expect("readlink /proc/thread-self");
    let s = link.to_string_lossy().into_owned();
    s.rsplit('/').next().unwrap().parse().expect("tid")
}

/// Whether thread tid sleeps (state S) inside syscall nr.
pub fn blocked_in(tid: i32, nr: i64) -> bool {
    let stat = match std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) {
        Ok(s) => s,
        Err(_) => return false,
    };
    let state = stat.rsplit(')').next().unwrap_or("").trim_start().chars().next();
    if state != Some('S') {
        return false;
    }
    let sc = std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")).unwrap_or_default();
    sc.split_whitespace().next().and_then(|f| f.parse::<i64>().ok()) == Some(nr)
}

/// Returns once every thread in tids sleeps in syscall nr.
pub fn wait_blocked(tids: &[i32], nr: i64) {
    for &t in tids {
        while !blocked_in(t, nr) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// Writes one whole line to stdout, unbuffered.
pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    out.write_all(line.as_bytes()).and_then(|_| out.flush()).expect("stdout");
}
