//! `lockstep check --ray` inside the package: a [`Cluster`] whose tasks Python's `lockstep.ray`
//! submits to Ray. The CLI plans the run and assembles the report (crates/cli/src/cluster.rs);
//! this file only carries the tasks to Python and each answer back.

use lockstep_cli::{Answer, Cluster, ClusterOptions, Task};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

/// The `lockstep.ray` object that runs tasks on a connected cluster.
struct RayCluster {
    driver: Py<PyAny>,
}

/// Installs Ray as the CLI's cluster: `lockstep.ray._connect(address, cpus_per_task)` is
/// called when a run asks for `--ray`, not before (Ray is an optional extra).
pub fn install() {
    lockstep_cli::set_connector(Box::new(|options: &ClusterOptions| {
        Python::attach(|py| {
            let driver = py
                .import("lockstep.ray")
                .and_then(|m| {
                    m.call_method1(
                        "_connect",
                        (options.address.as_str(), options.cpus_per_task),
                    )
                })
                .map_err(|e| python_error(py, e))?;
            Ok(Box::new(RayCluster {
                driver: driver.unbind(),
            }) as Box<dyn Cluster>)
        })
    }));
}

/// A Python exception as the CLI's error: its message alone for lockstep's own errors (they
/// are written for users), with the class otherwise.
fn python_error(py: Python<'_>, e: PyErr) -> anyhow::Error {
    let ours = py
        .import("lockstep._errors")
        .and_then(|m| m.getattr("LockstepError"))
        .is_ok_and(|class| e.is_instance(py, &class));
    if ours {
        anyhow::anyhow!("{}", e.value(py))
    } else {
        anyhow::anyhow!("{e}")
    }
}

fn task_dict<'py>(py: Python<'py>, task: &Task) -> PyResult<Bound<'py, PyDict>> {
    let files = PyList::empty(py);
    for f in &task.files {
        let file = PyDict::new(py);
        file.set_item("arg", f.arg)?;
        file.set_item("name", f.name.as_str())?;
        file.set_item("bytes", PyBytes::new(py, &f.bytes))?;
        files.append(file)?;
    }
    let d = PyDict::new(py);
    d.set_item("args", task.args.clone())?;
    d.set_item("files", files)?;
    Ok(d)
}

fn answer_of(item: &Bound<'_, PyAny>) -> PyResult<Answer> {
    let ok: Option<String> = item.get_item("ok")?.extract()?;
    let result = match ok {
        Some(line) => Ok(line),
        None => Err(item.get_item("error")?.extract::<String>()?),
    };
    Ok(Answer {
        task: item.get_item("task")?.extract()?,
        version: item.get_item("version")?.extract()?,
        node: item.get_item("node")?.extract()?,
        result,
    })
}

impl Cluster for RayCluster {
    fn describe(&self) -> String {
        Python::attach(|py| {
            self.driver
                .call_method0(py, "describe")
                .and_then(|d| d.extract::<String>(py))
                .unwrap_or_else(|e| format!("ray: {e}"))
        })
    }

    fn run(
        &self,
        tasks: &[Task],
        answer: &mut dyn FnMut(Answer) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        Python::attach(|py| {
            let list = PyList::empty(py);
            for task in tasks {
                list.append(task_dict(py, task).map_err(|e| python_error(py, e))?)
                    .map_err(|e| python_error(py, e))?;
            }
            let answers = self
                .driver
                .bind(py)
                .call_method1("run", (list,))
                .and_then(|it| it.try_iter())
                .map_err(|e| python_error(py, e))?;
            for item in answers {
                let item = item.map_err(|e| python_error(py, e))?;
                answer(answer_of(&item).map_err(|e| python_error(py, e))?)?;
            }
            Ok(())
        })
    }
}
