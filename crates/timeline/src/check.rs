//! A checker of trace-event JSON files against the Trace Event Format, for
//! tests (and anyone who wants to check a file before opening it).
//!
//! It checks: valid JSON, an object with a `traceEvents` array (or a bare
//! array); every event has `ph`, `ts`, `pid`, `tid` and the fields its phase
//! requires (`name`; `dur` for `X`; `id` for flow and async events; `args`
//! for metadata; a valid scope for instants); `B`/`E` balanced per thread;
//! complete events (`X`) nest per thread; flows start with `s`, end with one
//! `f` and every started flow ends; async `b`/`e` pairs match; timestamps
//! never go back on a thread.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// (pid, tid).
type Thread = (u64, u64);
/// (start, end, name).
type Slice = (f64, f64, String);

/// What is wrong with a trace file.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("no traceEvents array")]
    NoEvents,
    #[error("event {index}: {what}: {event}")]
    Event {
        index: usize,
        what: String,
        event: String,
    },
    #[error("{0}")]
    Unbalanced(String),
}

/// What a valid file holds.
#[derive(Debug, Default)]
pub struct Summary {
    pub events: usize,
    pub spans: usize,
    pub instants: usize,
    /// Flows with a start and an end.
    pub flows: usize,
    /// `process_name` by pid.
    pub processes: BTreeMap<u64, String>,
    /// `thread_name` by (pid, tid).
    pub threads: BTreeMap<(u64, u64), String>,
    /// For each flow id, the (thread name, span name) of the slices its
    /// flow events sit in.
    pub flow_slices: BTreeMap<u64, Vec<(String, String)>>,
    /// Every span: (pid, thread name, name).
    pub span_names: Vec<(u64, String, String)>,
    /// Every instant's name.
    pub instant_names: BTreeSet<String>,
}

fn num(e: &Value, k: &str) -> Option<f64> {
    e.get(k).and_then(Value::as_f64)
}

/// Checks `text`; the error names the first problem.
pub fn check(text: &str) -> Result<Summary, CheckError> {
    let v: Value = serde_json::from_str(text)?;
    let events = match &v {
        Value::Array(a) => a,
        Value::Object(o) => o
            .get("traceEvents")
            .and_then(Value::as_array)
            .ok_or(CheckError::NoEvents)?,
        _ => return Err(CheckError::NoEvents),
    };
    let mut s = Summary {
        events: events.len(),
        ..Summary::default()
    };
    let mut last_ts: HashMap<(u64, u64), f64> = HashMap::new();
    let mut b_stack: HashMap<(u64, u64), Vec<String>> = HashMap::new();
    // Open complete events per thread: their end times.
    let mut x_stack: HashMap<(u64, u64), Vec<f64>> = HashMap::new();
    // Flow (cat, name, id) -> ended?
    let mut flows: HashMap<(String, String, String), bool> = HashMap::new();
    let mut asyncs: HashMap<(String, String, String), i64> = HashMap::new();
    // Flow points by thread, resolved to slices once the threads are named.
    let mut flow_points: Vec<(u64, (u64, u64), f64)> = Vec::new();
    let mut slices: HashMap<Thread, Vec<Slice>> = HashMap::new();
    const EPS: f64 = 1e-9;
    for (index, e) in events.iter().enumerate() {
        let bad = |what: &str| CheckError::Event {
            index,
            what: what.to_string(),
            event: e.to_string(),
        };
        let ph = e
            .get("ph")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("no ph"))?;
        let ts = num(e, "ts").ok_or_else(|| bad("no numeric ts"))?;
        let pid = e
            .get("pid")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("no pid"))?;
        let tid = e
            .get("tid")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("no tid"))?;
        let name = e.get("name").and_then(Value::as_str);
        let thread = (pid, tid);
        if ph != "M" {
            if name.is_none() {
                return Err(bad("no name"));
            }
            let last = last_ts.entry(thread).or_insert(f64::MIN);
            if ts < *last {
                return Err(bad("timestamp goes back on its thread"));
            }
            *last = ts;
        }
        match ph {
            "M" => {
                let name = name.ok_or_else(|| bad("metadata without name"))?;
                let args = e.get("args").ok_or_else(|| bad("metadata without args"))?;
                match name {
                    "process_name" => {
                        let n = args["name"].as_str().ok_or_else(|| bad("no args.name"))?;
                        s.processes.insert(pid, n.to_string());
                    }
                    "thread_name" => {
                        let n = args["name"].as_str().ok_or_else(|| bad("no args.name"))?;
                        s.threads.insert(thread, n.to_string());
                    }
                    "process_sort_index" | "thread_sort_index" => {
                        args["sort_index"]
                            .as_i64()
                            .ok_or_else(|| bad("no args.sort_index"))?;
                    }
                    "process_labels" | "process_uptime_seconds" => {}
                    _ => return Err(bad("unknown metadata event")),
                }
            }
            "X" => {
                let dur = num(e, "dur").ok_or_else(|| bad("complete event without dur"))?;
                if dur < 0.0 {
                    return Err(bad("negative dur"));
                }
                let stack = x_stack.entry(thread).or_default();
                while stack.last().is_some_and(|&end| end <= ts + EPS) {
                    stack.pop();
                }
                if let Some(&end) = stack.last() {
                    if ts + dur > end + EPS {
                        return Err(bad("complete event overlaps its parent without nesting"));
                    }
                }
                stack.push(ts + dur);
                s.spans += 1;
                slices.entry(thread).or_default().push((
                    ts,
                    ts + dur,
                    name.unwrap_or_default().to_string(),
                ));
            }
            "B" => {
                b_stack
                    .entry(thread)
                    .or_default()
                    .push(name.unwrap_or_default().to_string());
                s.spans += 1;
            }
            "E" => {
                if b_stack.entry(thread).or_default().pop().is_none() {
                    return Err(bad("E without B"));
                }
            }
            "i" | "I" => {
                if let Some(scope) = e.get("s") {
                    if !matches!(scope.as_str(), Some("g" | "p" | "t")) {
                        return Err(bad("instant scope is not g, p or t"));
                    }
                }
                s.instants += 1;
                s.instant_names.insert(name.unwrap_or_default().to_string());
            }
            "s" | "t" | "f" => {
                let id = e.get("id").ok_or_else(|| bad("flow event without id"))?;
                let key = (
                    e.get("cat")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    name.unwrap_or_default().to_string(),
                    id.to_string(),
                );
                match (ph, flows.get(&key).copied()) {
                    ("s", None) => {
                        flows.insert(key, false);
                    }
                    ("s", Some(_)) => return Err(bad("flow id started twice")),
                    ("t" | "f", None) => return Err(bad("flow step before its start")),
                    (_, Some(true)) => return Err(bad("flow event after its end")),
                    ("f", Some(false)) => {
                        flows.insert(key, true);
                    }
                    _ => {}
                }
                let id = id.as_u64().unwrap_or(u64::MAX);
                flow_points.push((id, thread, ts));
            }
            "b" | "e" | "n" => {
                let id = e.get("id").ok_or_else(|| bad("async event without id"))?;
                let key = (
                    e.get("cat")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    name.unwrap_or_default().to_string(),
                    id.to_string(),
                );
                let open = asyncs.entry(key).or_default();
                match ph {
                    "b" => *open += 1,
                    "e" => {
                        *open -= 1;
                        if *open < 0 {
                            return Err(bad("async end without begin"));
                        }
                    }
                    _ => {}
                }
            }
            "C" => {
                e.get("args").ok_or_else(|| bad("counter without args"))?;
            }
            _ => return Err(bad("unknown phase")),
        }
    }
    if let Some((t, st)) = b_stack.iter().find(|(_, st)| !st.is_empty()) {
        return Err(CheckError::Unbalanced(format!(
            "thread {t:?}: B without E: {st:?}"
        )));
    }
    if let Some((k, _)) = flows.iter().find(|(_, ended)| !**ended) {
        return Err(CheckError::Unbalanced(format!("flow {k:?} never ends")));
    }
    if let Some((k, _)) = asyncs.iter().find(|(_, n)| **n != 0) {
        return Err(CheckError::Unbalanced(format!("async {k:?} never ends")));
    }
    s.flows = flows.len();
    for (id, thread, ts) in flow_points {
        let tname = s.threads.get(&thread).cloned().unwrap_or_default();
        let slice = slices
            .get(&thread)
            .and_then(|v| {
                v.iter()
                    .rev()
                    .find(|(a, b, _)| *a <= ts + EPS && ts <= *b + EPS)
            })
            .map(|(_, _, n)| n.clone())
            .ok_or_else(|| {
                CheckError::Unbalanced(format!("flow {id} at {ts} on {tname:?} is in no slice"))
            })?;
        s.flow_slices.entry(id).or_default().push((tname, slice));
    }
    for (thread, v) in &slices {
        let tname = s.threads.get(thread).cloned().unwrap_or_default();
        for (_, _, n) in v {
            s.span_names.push((thread.0, tname.clone(), n.clone()));
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn catches_what_is_wrong() {
        let ok = r#"[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":5},
                     {"ph":"s","name":"r","id":1,"pid":1,"tid":1,"ts":1},
                     {"ph":"X","name":"b","pid":1,"tid":1,"ts":1,"dur":2},
                     {"ph":"f","name":"r","id":1,"pid":1,"tid":1,"ts":2,"bp":"e"},
                     {"ph":"B","name":"c","pid":1,"tid":2,"ts":3},
                     {"ph":"E","pid":1,"tid":2,"ts":4,"name":"c"}]"#;
        let s = check(ok).unwrap();
        assert_eq!((s.spans, s.flows), (3, 1));
        for bad in [
            "{",
            r#"[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0}]"#,
            r#"[{"ph":"X","name":"a","pid":1,"ts":0,"dur":1}]"#,
            r#"[{"ph":"B","name":"a","pid":1,"tid":1,"ts":0}]"#,
            r#"[{"ph":"E","name":"a","pid":1,"tid":1,"ts":0}]"#,
            r#"[{"ph":"X","name":"a","pid":1,"tid":1,"ts":5,"dur":1},
                {"ph":"X","name":"b","pid":1,"tid":1,"ts":4,"dur":1}]"#,
            r#"[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":5},
                {"ph":"X","name":"b","pid":1,"tid":1,"ts":4,"dur":3}]"#,
            r#"[{"ph":"X","name":"a","pid":1,"tid":1,"ts":0,"dur":5},
                {"ph":"s","name":"r","id":1,"pid":1,"tid":1,"ts":1}]"#,
            r#"[{"ph":"f","name":"r","id":1,"pid":1,"tid":1,"ts":1}]"#,
            r#"[{"ph":"i","s":"x","name":"r","pid":1,"tid":1,"ts":1}]"#,
        ] {
            assert!(check(bad).is_err(), "{bad}");
        }
    }
}
