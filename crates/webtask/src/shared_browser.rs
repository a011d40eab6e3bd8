//! One headless Chromium per process, shared by every [`crate::WebTask`] in it; each env
//! works in browser contexts of its own (isolated cookies and storage), so instances never see
//! each other's state. Starting Chromium costs most of a second; a `lockstep check` makes many
//! instances.
//!
//! The browser is held by a keeper thread that lives as long as the process and never
//! returns, and the kernel kills Chromium (`PR_SET_PDEATHSIG`, see lockstep_layers::process)
//! when the process ends, however it ends (even `kill -9`). No Chromium outlives its process.

use std::sync::mpsc;
use std::sync::Mutex;
use std::time::Duration;

use lockstep_layers::chromium::Chromium;

static ENDPOINT: Mutex<Option<String>> = Mutex::new(None);

/// The DevTools endpoint of this process's Chromium, started on first use.
pub fn endpoint() -> Result<String, String> {
    let mut slot = ENDPOINT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(e) = slot.as_ref() {
        return Ok(e.clone());
    }
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("lockstep-chromium".into())
        .spawn(move || match Chromium::launch(Duration::from_secs(30)) {
            Ok(browser) => {
                let _ = tx.send(Ok(browser.endpoint()));
                // Holds the browser until the process ends (see the module doc).
                loop {
                    std::thread::park();
                }
            }
            Err(e) => {
                let _ = tx.send(Err(e));
            }
        })
        .map_err(|e| format!("cannot start the Chromium keeper thread: {e}"))?;
    let endpoint = rx
        .recv()
        .map_err(|_| "the Chromium keeper thread ended".to_string())??;
    *slot = Some(endpoint.clone());
    Ok(endpoint)
}
