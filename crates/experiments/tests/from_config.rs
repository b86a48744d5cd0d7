//! Experiments are a library: a test (or a script) runs one from a
//! configuration, and the configuration changes what it measures.

use nanopu_experiments::{run_experiments, Scale};
use nanopu_system::Config;

fn w2w_p50(cfg: Config, out: &std::path::Path) -> f64 {
    run_experiments(
        &["w2w-8B".into()],
        out,
        cfg,
        Scale::Quick,
        Some(1),
        1,
        false,
    )
    .expect("the experiment runs");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("w2w-8B.json")).unwrap()).unwrap();
    json["targets"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["key"] == "w2w-8B"))
        .and_then(|t| t["measured"].as_f64())
        .unwrap_or_else(|| panic!("w2w-8B in {json}"))
}

#[test]
fn an_experiment_runs_from_a_configuration() {
    let dir = std::env::temp_dir().join(format!("nanopu-exp-{}", std::process::id()));
    let base = w2w_p50(Config::default(), &dir.join("a"));
    // 10 ns more of MAC on each side: 20 ns more wire to wire, give or take
    // where the later arrival meets the core's `lnic_wait` polling loop (5
    // cycles, 1.56 ns, now that LNIC CSR writes do not flush).
    let slower =
        Config::parse("[nic]\nmac_serial_rx_ps = 36000\nmac_serial_tx_ps = 36000\n").unwrap();
    let more = w2w_p50(slower, &dir.join("b"));
    assert!(
        (more - base - 20.0).abs() < 1.6,
        "{base} ns, then {more} ns"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
