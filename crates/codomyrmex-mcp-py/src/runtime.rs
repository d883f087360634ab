//! The process's tokio runtime, the one way Rust code calls into Python, and the one way
//! Python code waits on Rust: both arranged so that the process exits cleanly.
//!
//! Python runs only on the runtime's blocking pool, holding the GIL for the call alone: the
//! runtime's workers (and with them `ping`, other calls and the transports) never wait for
//! Python code.
//!
//! ## Exit
//! Before Python 3.14, a thread that takes the GIL once the interpreter is finalizing is
//! ended with `pthread_exit`, a forced unwind. Through a Rust frame that catches unwinds (a
//! tokio task, a PyO3 method) it aborts the process with `FATAL: exception not rethrown`.
//! Two kinds of thread could meet it here: a blocking-pool thread running a Python tool that
//! was still running at exit (a call whose client had gone, or past its timeout), and a
//! Python thread blocked in Rust (`handle_json`, `serve_*`) returning at exit. And a
//! non-daemon thread serving forever held the exit itself.
//!
//! So [`exit_hook`] runs at the start of interpreter shutdown (registered with
//! `threading._register_atexit`, which runs before non-daemon threads are joined and before
//! `concurrent.futures` joins its workers): it marks the process as closing, which ends every
//! [`detached`] wait at once (servers stop within [`CLOSING_GRACE`]) and makes
//! [`with_python`] refuse new calls, then waits, with the GIL released, until every call in
//! flight on either side has finished, at most [`EXIT_WAIT`]. A Python tool that runs
//! longer than that is left running; should it take the GIL during finalization, the forced
//! unwind stops in [`HangOnUnwind`] (the thread sleeps until the process ends, as Python
//! 3.14 does) and never reaches a frame that would abort.

use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyTuple};
use tokio::runtime::Runtime;
use tokio_util::sync::CancellationToken;

static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();

/// How long a server or a waiting call may take to end once the process is closing.
pub(crate) const CLOSING_GRACE: Duration = Duration::from_secs(2);

/// How long the exit hook waits for the calls in flight, in all.
pub(crate) const EXIT_WAIT: Duration = Duration::from_secs(4);

/// What a call gets when the process is closing.
pub(crate) const CLOSING_MESSAGE: &str = "the Python interpreter is shutting down";

/// The shared multi-thread runtime, built on first use.
pub(crate) fn runtime() -> PyResult<&'static Runtime> {
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .thread_name("codomyrmex-mcp")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the tokio runtime: {e}")))
}

/// The process's closing state: cancelled by [`exit_hook`], and the number of calls in
/// flight between Rust and Python (either way).
struct Closing {
    token: CancellationToken,
    in_flight: Mutex<usize>,
    idle: Condvar,
}

fn closing_state() -> &'static Closing {
    static CLOSING: OnceLock<Closing> = OnceLock::new();
    CLOSING.get_or_init(|| Closing {
        token: CancellationToken::new(),
        in_flight: Mutex::new(0),
        idle: Condvar::new(),
    })
}

fn count() -> MutexGuard<'static, usize> {
    // The count is a plain integer: a poisoned lock still holds a good one.
    closing_state()
        .in_flight
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Cancelled once the interpreter has begun to shut down.
pub(crate) fn closing() -> &'static CancellationToken {
    &closing_state().token
}

/// One call in flight; the exit hook waits for it to be dropped.
struct InFlight(());

impl InFlight {
    /// Counts a call, unless the process is closing and `refuse_when_closing` is set.
    fn enter(refuse_when_closing: bool) -> Option<Self> {
        let mut n = count();
        // Under the lock: the hook cancels under it too, so either it sees this call or
        // this call sees it.
        if refuse_when_closing && closing().is_cancelled() {
            return None;
        }
        *n += 1;
        Some(Self(()))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut n = count();
        *n = n.saturating_sub(1);
        if *n == 0 {
            closing_state().idle.notify_all();
        }
    }
}

/// Dropped only when a Python call unwinds instead of returning: on a thread the
/// interpreter's finalization ends with `pthread_exit`, it parks the thread for good (the
/// process is ending) so that the forced unwind neither runs another destructor nor reaches
/// a frame that catches it (tokio's task harness, PyO3's trampolines). Outside shutdown it
/// lets the unwind go on. PyO3 does the same in `Python::attach`.
struct HangOnUnwind;

impl Drop for HangOnUnwind {
    fn drop(&mut self) {
        if closing().is_cancelled() {
            loop {
                std::thread::park();
            }
        }
    }
}

/// Calls `callable(*args)`: the one way Rust code on the runtime's threads calls Python
/// code (inside [`with_python`]). Should the interpreter end this thread while the call
/// runs, the thread stops here (see [`HangOnUnwind`]): `args` is lent to the call, so no
/// Rust destructor runs between the Python code and the guard (a Python object freed then
/// would be freed without the GIL, against the finalizing interpreter).
pub(crate) fn call<'py>(
    py: Python<'py>,
    callable: &Py<PyAny>,
    args: Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyAny>> {
    let hang = HangOnUnwind;
    // Called through an opaque pointer: the compiler cannot see that the call ends in a
    // function it assumes never unwinds (`PyObject_Call`, declared `extern "C"` by PyO3), so
    // this call keeps its landing pad and the forced unwind reaches `hang` (inlined, as in a
    // release build, it aborted the process instead).
    let invoke: &dyn Fn() -> PyResult<Bound<'py, PyAny>> = &|| callable.bind(py).call1(&args);
    let result = std::hint::black_box(invoke)();
    std::mem::forget(hang);
    result
}

/// Runs `f` with the GIL on a blocking thread and returns its text, or a description of the
/// Python exception it raised. Once the interpreter is shutting down it runs nothing and
/// answers [`CLOSING_MESSAGE`]. `f` calls Python through [`call`].
pub(crate) async fn with_python<F>(f: F) -> Result<String, String>
where
    F: FnOnce(Python<'_>) -> PyResult<String> + Send + 'static,
{
    let Some(entered) = InFlight::enter(true) else {
        return Err(CLOSING_MESSAGE.to_owned());
    };
    let joined = tokio::task::spawn_blocking(move || {
        let _entered = entered;
        if closing().is_cancelled() {
            return Err(CLOSING_MESSAGE.to_owned());
        }
        Python::attach(|py| f(py).map_err(|e| describe(py, &e)))
    })
    .await;
    joined.unwrap_or_else(|_| Err("the Python call did not complete".to_owned()))
}

/// Runs `work` on the runtime with the GIL released, the way every Python call that waits
/// on Rust does. Once the process is closing, `work` gets [`CLOSING_GRACE`] to end, then is
/// dropped and `on_closing()` is returned: a server stops, a waiting call gives up. The
/// exit hook waits for this to return.
pub(crate) fn detached<T, W>(
    py: Python<'_>,
    work: W,
    on_closing: impl FnOnce() -> T + Send,
) -> PyResult<T>
where
    W: std::future::Future<Output = T> + Send,
    T: Send,
{
    let rt = runtime()?;
    // Counted whatever the state: the hook must see this thread take the GIL back.
    let entered = InFlight::enter(false);
    let result = py.detach(|| {
        rt.handle().block_on(async {
            let mut work = std::pin::pin!(work);
            tokio::select! {
                result = &mut work => result,
                () = closing().cancelled() => {
                    match tokio::time::timeout(CLOSING_GRACE, work).await {
                        Ok(result) => result,
                        Err(_) => on_closing(),
                    }
                }
            }
        })
    });
    drop(entered);
    Ok(result)
}

/// Called by `threading` as interpreter shutdown begins: marks the process as closing and
/// waits, with the GIL released, for the calls in flight to end (at most [`EXIT_WAIT`]).
fn exit_hook(py: Python<'_>) {
    {
        let _n = count();
        closing().cancel();
    }
    let deadline = Instant::now() + EXIT_WAIT;
    py.detach(|| {
        let mut n = count();
        while *n > 0 {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            n = closing_state()
                .idle
                .wait_timeout(n, deadline - now)
                .map(|(n, _)| n)
                .unwrap_or_else(|poisoned| poisoned.into_inner().0);
        }
    });
}

/// Registers [`exit_hook`] with `threading._register_atexit`, after importing
/// `concurrent.futures.thread` so that the hook runs before that module joins its workers
/// (the hooks run last registered first). Called once, when `_core` is imported.
pub(crate) fn register_exit_hook(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    py.import("concurrent.futures.thread")?;
    let hook = PyCFunction::new_closure(
        py,
        Some(c"_codomyrmex_mcp_exit_hook"),
        Some(c"Ends codomyrmex_mcp's waits and lets its calls in flight finish before the interpreter shuts down."),
        |args, _kwargs| -> PyResult<()> {
            exit_hook(args.py());
            Ok(())
        },
    )?;
    py.import("threading")?
        .getattr("_register_atexit")?
        .call1((hook,))?;
    Ok(())
}

/// `TypeName: message` of a Python exception.
pub(crate) fn describe(py: Python<'_>, error: &PyErr) -> String {
    let name = error
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".to_owned());
    let message = error
        .value(py)
        .str()
        .map(|s| s.to_string())
        .unwrap_or_default();
    if message.is_empty() {
        name
    } else {
        format!("{name}: {message}")
    }
}
