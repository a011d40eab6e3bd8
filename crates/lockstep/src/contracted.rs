//! An env held to a reset contract its user wrote (`lockstep check --contract FILE --cmd ...`),
//! instead of the one it declares or the one inferred from its state.
//!
//! The contract's probed layers (a directory, a database file, a service, a browser) are read
//! after every reset, as for the built-in `webtask`: an external env cannot hand lockstep its
//! probes over the protocol, and should not have to, since the layers are what its author did
//! not think of (see `lockstep contract infer`, which proposes such a file).

use lockstep_canon::Value;

use crate::contract::Contract;
use crate::env::{Actions, Env, EnvError, EnvFactory, EnvSpec, Transition};
use crate::probe::ProbeSet;

/// Makes the instances of `inner`, each held to `contract` with the probes `probes()` builds.
pub struct Contracted<F> {
    pub inner: F,
    pub contract: Contract,
    pub probes: fn() -> ProbeSet,
}

impl<F: EnvFactory> EnvFactory for Contracted<F> {
    fn id(&self) -> String {
        self.inner.id()
    }

    fn make(&self) -> Result<Box<dyn Env>, EnvError> {
        Ok(hold(self.inner.make()?, &self.contract, self.probes))
    }

    fn make_threaded(&self) -> Result<Box<dyn Env>, EnvError> {
        Ok(hold(
            self.inner.make_threaded()?,
            &self.contract,
            self.probes,
        ))
    }

    fn thread_isolation(&self) -> Option<&dyn crate::check::ThreadIsolation> {
        self.inner.thread_isolation()
    }

    fn session(&self) -> Option<Box<dyn EnvFactory + '_>> {
        let session = self.inner.session()?;
        Some(Box::new(Contracted {
            inner: session,
            contract: self.contract.clone(),
            probes: self.probes,
        }))
    }

    fn forker(&self) -> Option<&dyn crate::check::Forker> {
        self.inner.forker()
    }

    fn vector_twin(&self) -> Option<Box<dyn EnvFactory + '_>> {
        self.inner.vector_twin()
    }
}

impl EnvFactory for Box<dyn EnvFactory + '_> {
    fn id(&self) -> String {
        self.as_ref().id()
    }

    fn make(&self) -> Result<Box<dyn Env>, EnvError> {
        self.as_ref().make()
    }

    fn make_threaded(&self) -> Result<Box<dyn Env>, EnvError> {
        self.as_ref().make_threaded()
    }

    fn thread_isolation(&self) -> Option<&dyn crate::check::ThreadIsolation> {
        self.as_ref().thread_isolation()
    }

    fn session(&self) -> Option<Box<dyn EnvFactory + '_>> {
        self.as_ref().session()
    }

    fn forker(&self) -> Option<&dyn crate::check::Forker> {
        self.as_ref().forker()
    }

    fn vector_twin(&self) -> Option<Box<dyn EnvFactory + '_>> {
        self.as_ref().vector_twin()
    }
}

fn hold(env: Box<dyn Env>, contract: &Contract, probes: fn() -> ProbeSet) -> Box<dyn Env> {
    Box::new(HeldEnv {
        env,
        contract: contract.clone(),
        probes: probes(),
    })
}

struct HeldEnv {
    env: Box<dyn Env>,
    contract: Contract,
    probes: ProbeSet,
}

impl Env for HeldEnv {
    fn spec(&self) -> &EnvSpec {
        self.env.spec()
    }

    fn reset(&mut self, seed: u64, options: &Value) -> Result<&Transition, EnvError> {
        self.env.reset(seed, options)
    }

    fn reset_unseeded(&mut self, options: &Value) -> Option<Result<&Transition, EnvError>> {
        self.env.reset_unseeded(options)
    }

    fn step(&mut self, actions: &Actions) -> Result<&Transition, EnvError> {
        self.env.step(actions)
    }

    fn state(&mut self) -> Result<Value, EnvError> {
        self.env.state()
    }

    fn contract(&self) -> Option<Contract> {
        Some(self.contract.clone())
    }

    fn seedless(&self) -> bool {
        self.env.seedless()
    }

    fn probes(&self) -> Option<&ProbeSet> {
        Some(&self.probes)
    }

    fn trace_sources(&mut self, on: bool) -> Result<bool, EnvError> {
        self.env.trace_sources(on)
    }

    fn traced_sources(&mut self) -> Result<Vec<Value>, EnvError> {
        self.env.traced_sources()
    }

    fn effects(&mut self) -> Result<Option<Vec<Value>>, EnvError> {
        self.env.effects()
    }

    fn provenance(&mut self) -> Result<Option<Value>, EnvError> {
        self.env.provenance()
    }

    fn close(&mut self) -> Result<(), EnvError> {
        self.env.close()
    }
}
