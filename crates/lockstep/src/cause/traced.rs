//! Instances with their source tracer on: a factory that switches it on in every env it makes
//! and gathers what each one read, in the order the instances report it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use lockstep_canon::Value;

use super::SourceRead;
use crate::env::{Actions, Env, EnvError, EnvFactory, EnvSpec, Transition};

/// What every traced instance of one re-run shares.
#[derive(Default)]
struct Gathered {
    reads: Mutex<Vec<SourceRead>>,
    /// An instance whose tracer could be switched on.
    supported: AtomicBool,
    instances: AtomicUsize,
}

impl Gathered {
    fn take(&self, env: &mut dyn Env) {
        // A read that cannot be fetched (the instance failed) is lost, not fatal: the re-run
        // explains what it can.
        let Ok(values) = env.traced_sources() else {
            return;
        };
        let mut reads = self.reads.lock().unwrap_or_else(|e| e.into_inner());
        reads.extend(
            values
                .iter()
                .filter_map(|v| lockstep_canon::from_value::<SourceRead>(v).ok()),
        );
    }
}

/// Makes the instances of `inner` with their tracer on (see the module doc).
pub struct Traced<'a> {
    inner: &'a dyn EnvFactory,
    gathered: Arc<Gathered>,
}

/// What a traced re-run saw.
pub struct TracedRun {
    pub supported: bool,
    pub instances: usize,
    pub reads: Vec<SourceRead>,
}

impl<'a> Traced<'a> {
    pub fn new(inner: &'a dyn EnvFactory) -> Traced<'a> {
        Traced {
            inner,
            gathered: Arc::default(),
        }
    }

    /// One rollout of `seed` for `steps` steps on a traced instance, its actions those every
    /// check plays.
    pub fn solo(&self, seed: u64, steps: u64) -> Result<(), String> {
        let mut env = self.make().map_err(|e| e.to_string())?;
        let opts = crate::trace::RolloutOptions::default();
        crate::trace::rollout(env.as_mut(), seed, steps, &opts)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Everything read, once every instance is gone.
    pub fn finish(self) -> TracedRun {
        let g = &self.gathered;
        TracedRun {
            supported: g.supported.load(Ordering::Relaxed),
            instances: g.instances.load(Ordering::Relaxed),
            reads: std::mem::take(&mut *g.reads.lock().unwrap_or_else(|e| e.into_inner())),
        }
    }
}

impl EnvFactory for Traced<'_> {
    fn id(&self) -> String {
        self.inner.id()
    }

    fn make(&self) -> Result<Box<dyn Env>, EnvError> {
        self.traced(self.inner.make()?)
    }

    /// On a thread of its own as in the check; never in a fork (`thread_isolation`), whose
    /// reads would not come back. Only a divergence is re-run, never a crash.
    fn make_threaded(&self) -> Result<Box<dyn Env>, EnvError> {
        self.traced(self.inner.make_threaded()?)
    }
}

impl Traced<'_> {
    fn traced(&self, mut env: Box<dyn Env>) -> Result<Box<dyn Env>, EnvError> {
        if env.trace_sources(true)? {
            self.gathered.supported.store(true, Ordering::Relaxed);
        }
        self.gathered.instances.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(TracedEnv {
            env,
            gathered: Arc::clone(&self.gathered),
            closed: false,
        }))
    }
}

/// An instance whose reads are fetched before each call (those of the call before) and when
/// it ends.
struct TracedEnv {
    env: Box<dyn Env>,
    gathered: Arc<Gathered>,
    closed: bool,
}

impl Env for TracedEnv {
    fn spec(&self) -> &EnvSpec {
        self.env.spec()
    }

    fn reset(&mut self, seed: u64, options: &Value) -> Result<&Transition, EnvError> {
        self.gathered.take(self.env.as_mut());
        self.env.reset(seed, options)
    }

    fn reset_unseeded(&mut self, options: &Value) -> Option<Result<&Transition, EnvError>> {
        self.gathered.take(self.env.as_mut());
        self.env.reset_unseeded(options)
    }

    fn step(&mut self, actions: &Actions) -> Result<&Transition, EnvError> {
        self.gathered.take(self.env.as_mut());
        self.env.step(actions)
    }

    fn state(&mut self) -> Result<Value, EnvError> {
        self.env.state()
    }

    fn contract(&self) -> Option<crate::contract::Contract> {
        self.env.contract()
    }

    fn seedless(&self) -> bool {
        self.env.seedless()
    }

    fn probes(&self) -> Option<&crate::probe::ProbeSet> {
        self.env.probes()
    }

    fn effects(&mut self) -> Result<Option<Vec<Value>>, EnvError> {
        self.env.effects()
    }

    fn provenance(&mut self) -> Result<Option<Value>, EnvError> {
        self.env.provenance()
    }

    fn close(&mut self) -> Result<(), EnvError> {
        self.gathered.take(self.env.as_mut());
        self.closed = true;
        self.env.close()
    }
}

impl Drop for TracedEnv {
    fn drop(&mut self) {
        if !self.closed {
            self.gathered.take(self.env.as_mut());
        }
    }
}
