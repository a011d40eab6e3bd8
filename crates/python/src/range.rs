//! `RangeCore`: the range (`lockstep_range::RangeEnv`) for `lockstep.range`, stepped from
//! Python with numpy observations. Names, spaces and shapes all come from the env's own spec,
//! so the Python side never hard-codes the range's layout.

use std::collections::BTreeMap;

use lockstep::env::{Action, Actions, Env, Transition};
use lockstep_range::{factory_from_name, RangeEnv};
use numpy::{PyArray1, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::arrays::{int_vector, to_numpy};
use crate::convert::{serde_to_py, to_py, to_value};
use crate::errors::{error, Kind};

/// One range env, built from a range env name (`range:SCENARIO[:PRESET][?KEY=VALUE&...]`, the
/// CLI's names, so `lockstep trace --env NAME` replays the same episodes).
#[pyclass(module = "lockstep._native")]
pub struct RangeCore {
    env: RangeEnv,
    name: String,
    /// Agent names as Python strings, made once.
    agent_names: BTreeMap<String, Py<PyString>>,
}

#[pymethods]
impl RangeCore {
    #[new]
    fn new(py: Python<'_>, name: &str) -> PyResult<RangeCore> {
        let factory = match factory_from_name(name) {
            None => {
                return Err(error(
                    Kind::Config,
                    format!(
                    "{name:?} is not a range env name (range:SCENARIO[:PRESET][?KEY=VALUE&...])"
                ),
                ))
            }
            Some(Err(e)) => return Err(error(Kind::Config, format!("env {name:?}: {e}"))),
            Some(Ok(f)) => f,
        };
        let env = factory.build();
        let agent_names = env
            .spec()
            .agents
            .iter()
            .map(|a| (a.name.clone(), PyString::intern(py, &a.name).unbind()))
            .collect();
        Ok(RangeCore {
            env,
            name: name.to_string(),
            agent_names,
        })
    }

    /// The env name this core was built from.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// `{"id", "config", "agents": [{"name", "action_space", "observation_space"}]}`, spaces
    /// in lockstep's JSON form (docs/protocol.md).
    fn spec<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let spec = self.env.spec();
        let out = PyDict::new(py);
        out.set_item("id", &spec.id)?;
        out.set_item("config", to_py(py, &spec.config)?)?;
        out.set_item("agents", serde_to_py(py, &spec.agents)?)?;
        Ok(out.into_any())
    }

    /// Starts an episode: `(observations, infos)`, each a dict by agent. `seed=None` continues
    /// the chain of the last seed (`lockstep::seed::SeedTree::continued`), as a training loop's
    /// `reset()` after `reset(seed=S)` expects.
    #[pyo3(signature = (seed, options = None))]
    fn reset<'py>(
        &mut self,
        py: Python<'py>,
        seed: Option<u64>,
        options: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let options = match options {
            Some(o) => to_value(o)?,
            None => lockstep_canon::Value::Null,
        };
        let t = match seed {
            Some(seed) => self.env.reset(seed, &options),
            None => self
                .env
                .reset_unseeded(&options)
                .expect("the range has an unseeded reset"),
        }
        .map_err(|e| error(Kind::Config, format!("{}: reset: {e}", self.name)))?;
        let (obs, _, _, _, infos) = render(py, &self.agent_names, t)?;
        PyTuple::new(py, [obs, infos])
    }

    /// The seed of the last episode (`None` before the first reset).
    #[getter]
    fn last_seed(&self) -> Option<u64> {
        self.env.last_seed()
    }

    /// One step of the live agents: `actions` maps agent names to `[type, target]` (numpy
    /// integer arrays or sequences). Returns `(observations, rewards, terminations,
    /// truncations, infos)`.
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        actions: &Bound<'py, PyDict>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let mut joint = Actions::new();
        for (agent, action) in actions.iter() {
            let name: String = agent.extract()?;
            let ints = int_vector(&action).map_err(|e| {
                error(
                    Kind::Config,
                    format!("action of {name:?} is not a sequence of integers: {e}"),
                )
            })?;
            joint.insert(name, Action::MultiDiscrete(ints));
        }
        let t = self
            .env
            .step(&joint)
            .map_err(|e| error(Kind::Env, format!("{}: step: {e}", self.name)))?;
        let (obs, rewards, terms, truncs, infos) = render(py, &self.agent_names, t)?;
        PyTuple::new(py, [obs, rewards, terms, truncs, infos])
    }

    /// The log lines the last reset or step emitted.
    fn logs(&self) -> Vec<String> {
        self.env.transition().logs.clone()
    }

    /// The whole core state (what the range's reset contract fingerprints), as plain Python.
    fn state<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let state = self
            .env
            .state()
            .map_err(|e| error(Kind::Env, e.to_string()))?;
        to_py(py, &state)
    }
}

type Rendered<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
);

fn render<'py>(
    py: Python<'py>,
    names: &BTreeMap<String, Py<PyString>>,
    t: &Transition,
) -> PyResult<Rendered<'py>> {
    let (obs, rewards, terms, truncs, infos) = (
        PyDict::new(py),
        PyDict::new(py),
        PyDict::new(py),
        PyDict::new(py),
        PyDict::new(py),
    );
    for (agent, step) in &t.agents {
        let name = match names.get(agent) {
            Some(n) => n.bind(py).clone(),
            None => PyString::new(py, agent),
        };
        let o = PyDict::new(py);
        for (key, array) in &step.obs {
            o.set_item(PyString::intern(py, key), to_numpy(py, array)?)?;
        }
        obs.set_item(&name, o)?;
        rewards.set_item(&name, step.reward)?;
        terms.set_item(&name, step.terminated)?;
        truncs.set_item(&name, step.truncated)?;
        infos.set_item(&name, to_py(py, &step.info)?)?;
    }
    Ok((
        obs.into_any(),
        rewards.into_any(),
        terms.into_any(),
        truncs.into_any(),
        infos.into_any(),
    ))
}

/// The range's scenario names and preset names, from the Rust side.
#[pyfunction]
pub fn range_catalogue() -> (Vec<String>, Vec<String>) {
    (
        lockstep_range::scenarios()
            .iter()
            .map(|s| s.to_string())
            .collect(),
        lockstep_range::PRESETS
            .iter()
            .map(|p| p.to_string())
            .collect(),
    )
}

const NOT_A_NAME: &str = "is not a range env name (range:SCENARIO[:PRESET][?KEY=VALUE&...])";

/// N range sub-envs stepped together (`lockstep_range::Batch`), for `lockstep.range.vector_env`:
/// observations as numpy arrays of shape `[N, ...]`, one per agent and key.
#[pyclass(module = "lockstep._native")]
pub struct RangeBatchCore {
    batch: lockstep_range::Batch,
    name: String,
}

#[pymethods]
impl RangeBatchCore {
    #[new]
    #[pyo3(signature = (name, n, seed0, threads = 1))]
    fn new(name: &str, n: usize, seed0: u64, threads: usize) -> PyResult<RangeBatchCore> {
        let factory = match factory_from_name(name) {
            None => return Err(error(Kind::Config, format!("{name:?} {NOT_A_NAME}"))),
            Some(Err(e)) => return Err(error(Kind::Config, format!("env {name:?}: {e}"))),
            Some(Ok(f)) => f,
        };
        let batch = lockstep_range::Batch::new(factory.params().clone(), n, seed0, threads)
            .map_err(|e| error(Kind::Config, format!("env {name:?}: {e}")))?;
        Ok(RangeBatchCore {
            batch,
            name: name.to_string(),
        })
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    fn __len__(&self) -> usize {
        self.batch.len()
    }

    /// The spec every sub-env shares, as `RangeCore.spec()`.
    fn spec<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let spec = self.batch.spec();
        let out = PyDict::new(py);
        out.set_item("id", &spec.id)?;
        out.set_item("config", to_py(py, &spec.config)?)?;
        out.set_item("agents", serde_to_py(py, &spec.agents)?)?;
        Ok(out.into_any())
    }

    /// Copies of the buffers: `{agent: {key: ndarray[N, ...]}}`.
    fn observations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let n = self.batch.len();
        let out = PyDict::new(py);
        for (b, spec) in self.batch.buffers().iter().enumerate() {
            let agent = lockstep_range::AGENTS[spec.agent];
            let per_agent = match out.get_item(agent)? {
                Some(d) => d.cast_into::<PyDict>()?,
                None => {
                    let d = PyDict::new(py);
                    out.set_item(agent, &d)?;
                    d
                }
            };
            let flat = match self.batch.buffer(b) {
                lockstep_range::BufferData::F32(v) => PyArray1::from_slice(py, v).into_any(),
                lockstep_range::BufferData::I8(v) => PyArray1::from_slice(py, v).into_any(),
            };
            let mut shape = vec![n];
            shape.extend(&spec.shape);
            per_agent.set_item(
                PyString::intern(py, spec.key),
                flat.call_method1("reshape", (PyTuple::new(py, shape)?,))?,
            )?;
        }
        Ok(out.into_any())
    }

    /// Rewards `[N, 4]` (float64, agents in name order), terminated `[N]`, truncated `[N]`.
    fn outcomes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let n = self.batch.len();
        let rewards = PyArray1::from_slice(py, self.batch.rewards())
            .call_method1("reshape", ((n, lockstep_range::N_AGENTS),))?;
        let term = PyArray1::from_slice(py, self.batch.terminated()).into_any();
        let trunc = PyArray1::from_slice(py, self.batch.truncated()).into_any();
        PyTuple::new(py, [rewards, term, trunc])
    }

    /// Each sub-env's current episode seed and episode count, `[N]` uint64 each.
    fn seeds<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let n = self.batch.len();
        let seeds: Vec<u64> = (0..n).map(|i| self.batch.seed(i)).collect();
        let episodes: Vec<u64> = (0..n).map(|i| self.batch.episode(i)).collect();
        PyTuple::new(
            py,
            [
                PyArray1::from_vec(py, seeds).into_any(),
                PyArray1::from_vec(py, episodes).into_any(),
            ],
        )
    }

    /// Steps every sub-env: `actions` is an int64 array `[N, 4, 2]` (sub-env, agent in name
    /// order, `[type, target]`). Sub-envs whose episode ended at the last step are reset with
    /// their next seed instead (their actions ignored).
    fn step(&mut self, actions: &Bound<'_, PyAny>) -> PyResult<()> {
        let n = self.batch.len();
        let arr = actions.cast::<PyArrayDyn<i64>>().map_err(|_| {
            error(
                Kind::Config,
                "actions must be a numpy int64 array of shape [N, 4, 2]",
            )
        })?;
        let ro = arr.readonly();
        if ro.shape() != [n, lockstep_range::N_AGENTS, 2] {
            return Err(error(
                Kind::Config,
                format!("actions have shape {:?}, expected [{n}, 4, 2]", ro.shape()),
            ));
        }
        let flat = ro.as_array();
        let joint: Vec<lockstep_range::JointAction> = (0..n)
            .map(|i| {
                let mut j = lockstep_range::JointAction::default();
                for (a, act) in j.0.iter_mut().enumerate() {
                    act.kind = flat[[i, a, 0]];
                    act.target = flat[[i, a, 1]];
                }
                j
            })
            .collect();
        let batch = &mut self.batch;
        actions
            .py()
            .detach(|| batch.step_observed(&joint))
            .map_err(|e| error(Kind::Env, format!("{}: step: {e}", self.name)))
    }

    /// Sub-env `i`'s infos (`{agent: dict}`) and the log lines its last reset or step emitted.
    fn transition<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyTuple>> {
        if i >= self.batch.len() {
            return Err(error(
                Kind::Config,
                format!("no sub-env {i} in a batch of {}", self.batch.len()),
            ));
        }
        let t = self.batch.transition(i);
        let infos = PyDict::new(py);
        for (agent, step) in &t.agents {
            infos.set_item(agent, to_py(py, &step.info)?)?;
        }
        PyTuple::new(
            py,
            [
                infos.into_any(),
                t.logs.clone().into_pyobject(py)?.into_any(),
            ],
        )
    }
}
