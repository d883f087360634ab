//! Tests of the shared spin's rules on a socket pair: how a wait ends, the overlap rule, and
//! one spinner at a time. The stdio side is tested in `stdio_spin_tests.rs`, the HTTP side in
//! `http/conn_spin_tests.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::McpServerConfig;

/// A generous guard against hangs; never a performance assertion.
const HANG: Duration = Duration::from_secs(30);

#[test]
fn a_spin_is_bounded_and_ends_when_the_input_is_readable() {
    let (mut tx, rx) = UnixStream::pair().unwrap();
    let spin = Spin::new(Duration::from_millis(1)).unwrap();
    assert_eq!(spin.wait(&rx), Spun::Expired);
    let polls = spin.seen.polls();
    assert!(polls > 0);
    tx.write_all(b"x").unwrap();
    assert_eq!(spin.wait(&rx), Spun::Ready);
    assert_eq!(spin.seen.polls(), polls + 1, "readable at the first poll");
    assert!(!spin.is_spinning());
    assert!(Spin::new(Duration::ZERO).is_none(), "zero: no spin at all");
}

#[test]
fn no_spin_while_work_is_in_flight_or_after_calls_overlapped() {
    let (_tx, rx) = UnixStream::pair().unwrap();
    let spin = Spin::new(Duration::from_millis(1)).unwrap();
    spin.enter(false);
    assert_eq!(spin.wait(&rx), Spun::Skipped);
    spin.leave(false);
    spin.enter(true);
    spin.enter(true);
    spin.leave(true);
    assert_eq!(spin.wait(&rx), Spun::Skipped, "one call still in flight");
    spin.leave(true);
    assert_eq!(spin.wait(&rx), Spun::Overlapped);
    assert_eq!(spin.seen.polls(), 0, "none of these polled");
    // The next spell is judged on its own.
    spin.enter(true);
    spin.leave(true);
    assert_eq!(spin.wait(&rx), Spun::Expired);
}

#[test]
fn calls_are_numbered_in_the_order_they_start_and_buffered_input_is_no_call() {
    let (_tx, rx) = UnixStream::pair().unwrap();
    let spin = Spin::new(Duration::from_millis(1)).unwrap();
    assert_eq!(spin.calls_started(), 0);
    assert_eq!((spin.enter(true), spin.enter(true)), (0, 1));
    assert_eq!(spin.enter(false), 0, "buffered input takes no number");
    assert_eq!(spin.calls_started(), 2);
    assert_eq!(spin.in_flight(), 3);
    spin.leave(true);
    spin.leave(false);
    assert_eq!(spin.in_flight(), 1, "one call left");
    assert_eq!(spin.wait(&rx), Spun::Skipped);
    spin.leave(true);
    assert_eq!((spin.in_flight(), spin.calls_started()), (0, 2));
    // The numbers wrap; the calls in flight are not touched by it.
    spin.calls
        .store(u64::from(u32::MAX) << 32, Ordering::SeqCst);
    assert_eq!(spin.enter(true), u32::MAX);
    assert_eq!((spin.calls_started(), spin.in_flight()), (0, 1));
    spin.leave(true);
    assert_eq!(spin.in_flight(), 0);
}

#[test]
fn one_thread_spins_at_a_time() {
    let (_tx, rx) = UnixStream::pair().unwrap();
    let spin = Spin::new(Duration::from_millis(1)).unwrap();
    spin.spinning.store(true, Ordering::SeqCst);
    assert_eq!(spin.wait(&rx), Spun::Elsewhere);
    assert_eq!(spin.seen.polls(), 0);
    spin.spinning.store(false, Ordering::SeqCst);
    assert_eq!(spin.wait(&rx), Spun::Expired);
    assert!(!spin.is_spinning(), "released when the spin ended");
}

#[test]
fn a_call_starting_elsewhere_ends_a_spin() {
    let (_tx, rx) = UnixStream::pair().unwrap();
    let spin = Arc::new(Spin::new(McpServerConfig::MAX_INPUT_SPIN).unwrap());
    // The spin may end by its bound before the call starts on a loaded machine: then again.
    for _ in 0..100 {
        let spinner = {
            let spin = spin.clone();
            let rx = rx.try_clone().unwrap();
            std::thread::spawn(move || spin.wait(&rx))
        };
        let deadline = std::time::Instant::now() + HANG;
        while !spin.is_spinning() && !spinner.is_finished() {
            assert!(std::time::Instant::now() < deadline, "never spun");
            std::thread::yield_now();
        }
        spin.enter(true);
        let outcome = spinner.join().unwrap();
        spin.leave(true);
        if outcome == Spun::Skipped {
            return;
        }
        assert_eq!(outcome, Spun::Expired);
    }
    panic!("no spin was ended by a call");
}

#[test]
fn the_environment_override_takes_whole_microseconds_only() {
    let f = |v| from_env("X", v);
    assert_eq!(f(None), None);
    assert_eq!(f(Some("0")), Some(Duration::ZERO));
    assert_eq!(f(Some(" 250 ")), Some(Duration::from_micros(250)));
    assert_eq!(f(Some("1.5")), None);
    assert_eq!(f(Some("-1")), None);
    assert_eq!(f(Some("")), None);
}

#[test]
fn the_runnable_tasks_are_read_from_loadavg() {
    assert_eq!(runnable_in_loadavg("1.47 2.46 3.15 3/512 41230\n"), Some(3));
    assert_eq!(runnable_in_loadavg("0.00 0.00 0.00 1/90 7"), Some(1));
    assert_eq!(runnable_in_loadavg("0.00 0.00 0.00"), None);
    assert_eq!(runnable_in_loadavg("a b c x/y z"), None);
    assert_eq!(runnable_in_loadavg(""), None);
    // The counter is one of the runnable: a busy count when the others would fill every CPU.
    assert!(!is_busy_with(2, 2));
    assert!(is_busy_with(3, 2));
    assert!(!is_busy_with(1, 1) && is_busy_with(2, 1));
}

#[test]
fn on_a_busy_machine_no_spin_starts_and_the_count_is_taken_at_most_every_period() {
    let (_tx, rx) = UnixStream::pair().unwrap();
    let spin = Spin::new(Duration::from_millis(1)).unwrap().judging();
    let busy = spin.cpus + 1;
    let quiet = spin.cpus;
    let t0 = std::time::Instant::now();
    let at = |n: u32| t0 + SAMPLE_EVERY * n;
    assert!(
        !spin.is_busy(at(0), || Some(busy)),
        "one busy count is a moment"
    );
    assert!(
        !spin.is_busy(at(0) + SAMPLE_EVERY / 2, || Some(busy)),
        "not counted again yet"
    );
    assert!(spin.is_busy(at(1), || Some(busy)), "two in a row: busy");
    assert!(spin.is_busy(at(2), || Some(busy)));
    assert!(
        spin.is_busy(at(3), || Some(quiet)),
        "one quiet count is a moment too"
    );
    assert!(!spin.is_busy(at(4), || Some(quiet)), "two: quiet again");
    assert!(!spin.is_busy(at(5), || None), "unknown counts as quiet");
    // Busy at times far ahead, so that the wait below falls inside the period however slowly
    // this test runs.
    let later = t0 + Duration::from_secs(3600);
    spin.is_busy(later, || Some(busy));
    assert!(spin.is_busy(later + SAMPLE_EVERY, || Some(busy)));
    assert_eq!(spin.wait(&rx), Spun::Busy);
    assert_eq!(spin.seen.polls(), 0, "a busy machine gets no poll");
    assert!(!spin.is_spinning());
}

#[test]
fn a_count_is_taken_once_per_period() {
    let spin = Spin::new(Duration::from_millis(1)).unwrap().judging();
    let t0 = std::time::Instant::now() + Duration::from_secs(3600);
    let taken = std::cell::Cell::new(0);
    for i in 0..10 {
        spin.is_busy(t0 + SAMPLE_EVERY / 20 * i, || {
            taken.set(taken.get() + 1);
            Some(0)
        });
    }
    assert_eq!(taken.get(), 1, "ten questions inside one period, one count");
}

#[test]
fn the_tests_of_the_other_rules_do_not_look_at_the_load_but_a_build_does() {
    let spin = Spin::new(Duration::from_millis(1)).unwrap();
    assert!(
        !spin.judge,
        "off in tests, so a loaded test machine cannot turn spins off"
    );
    assert!(spin.judging().judge);
}
