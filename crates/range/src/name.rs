//! Env names of the range: `range:SCENARIO[:PRESET][?KEY=VALUE[&KEY=VALUE]...]`.
//!
//! A name is the whole configuration: the scenario, an optional preset (`easy`, `medium`,
//! `hard`), and `Params` fields set by name, e.g. `range:ransomware:medium?max_ticks=25`.
//! Values are JSON (`25`, `0.5`, `true`); anything that is not JSON is taken as a string.
//! Traces and golden files record the name, so a name must resolve to the same parameters
//! every time, which is why the factory reports the name it was built from as its id.

use lockstep_canon::{Map, Value};

use crate::env::{factory, params_from_options, RangeFactory};
use crate::RangeError;

/// Prefix of every range env name.
pub const PREFIX: &str = "range:";

/// The factory a name describes; `None` when the name is not a range name at all.
pub fn factory_from_name(name: &str) -> Option<Result<RangeFactory, RangeError>> {
    let rest = name.strip_prefix(PREFIX)?;
    Some(parse(name, rest))
}

fn parse(name: &str, rest: &str) -> Result<RangeFactory, RangeError> {
    let (head, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (scenario, preset) = match head.split_once(':') {
        Some((s, p)) => (s, Some(p)),
        None => (head, None),
    };
    let base = factory(scenario, preset)?;
    let mut overrides = Map::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let Some((key, text)) = pair.split_once('=') else {
            return Err(RangeError::BadOptions {
                pointer: "/params".into(),
                why: format!("{pair:?} in env name {name:?} is not KEY=VALUE"),
            });
        };
        let value = lockstep_canon::parse(text.as_bytes())
            .unwrap_or_else(|_| Value::String(text.to_string()));
        overrides.insert(key.to_string(), value);
    }
    let params = if overrides.is_empty() {
        base.params().clone()
    } else {
        let mut options = Map::new();
        options.insert("params".into(), Value::Object(overrides));
        params_from_options(base.params(), &Value::Object(options))?
    };
    Ok(RangeFactory::new(params)?.with_id(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep::env::EnvFactory;

    #[test]
    fn names_carry_preset_and_overrides() {
        let f = factory_from_name("range:ransomware:medium?max_ticks=25&log_latency=3")
            .unwrap()
            .unwrap();
        assert_eq!(f.params().max_ticks, 25);
        assert_eq!(f.params().log_latency, 3);
        assert_eq!(f.id(), "range:ransomware:medium?max_ticks=25&log_latency=3");
        assert_eq!(f.make().unwrap().spec().id, f.id());
    }

    #[test]
    fn bad_names_are_errors_and_other_names_are_not_ours() {
        assert!(factory_from_name("fixture").is_none());
        for bad in [
            "range:nope",
            "range:ransomware:insane",
            "range:ransomware?max_ticks",
            "range:ransomware?bogus=1",
        ] {
            assert!(factory_from_name(bad).unwrap().is_err(), "{bad}");
        }
    }
}
