//! The FireSim load generator's arrival process (`LoadMode::OpenTicked`):
//! sends only on switch iterations, at most one per iteration, after an
//! exponential gap (l-nic/firesim target-design/switch/switch.cc:685-700).

use nanopu_sim::{SimDuration, SimTime};
use nanopu_system::client::{Client, ClientEvent, ClientIo};
use nanopu_system::{LoadConfig, LoadMode};

/// Send times of `count` open-loop arrivals under `mode`, in femtoseconds.
fn send_times(mode: LoadMode, count: u64) -> Vec<u64> {
    let cfg = LoadConfig {
        count,
        warmup: 0,
        mode,
        ..LoadConfig::default()
    };
    let mut client = Client::new(cfg, 1, 2, 1024, SimDuration::ZERO);
    let mut out = ClientIo::default();
    let mut times = vec![0];
    client.start(SimTime::ZERO, &mut out);
    while let Some(at) = out.events().iter().find_map(|&(at, e)| match e {
        ClientEvent::Tick => Some(at),
        _ => None,
    }) {
        out.clear();
        times.push(at.fs());
        client.tick(at, &mut out);
    }
    times
}

#[test]
fn ticked_arrivals_fall_on_iterations_one_at_most_per_iteration() {
    // 350 cycles between requests at 3.2 GHz, iterations of 140 cycles.
    let cycle_fs = 312_500u64;
    let tick_fs = 140 * cycle_fs;
    let rate_mrps = 3200.0 / 350.0;
    let t = send_times(
        LoadMode::OpenTicked {
            rate_mrps,
            tick_ns: 140.0 / 3.2,
        },
        20_000,
    );
    assert_eq!(t.len(), 20_000);
    for w in t.windows(2) {
        let gap = w[1] - w[0];
        assert!(
            gap >= tick_fs,
            "at most one request per iteration: gap {gap} fs"
        );
        assert_eq!(gap % tick_fs, 0, "requests leave on iteration boundaries");
    }
    // The mean gap is a whole number of iterations above the exponential
    // one: tick / (1 - e^(-tick / mean)), 424.5 cycles here.
    let mean_cycles = (t[t.len() - 1] - t[0]) as f64 / (t.len() - 1) as f64 / cycle_fs as f64;
    let expected = 140.0 / (1.0 - (-140.0f64 / 350.0).exp());
    assert!(
        (mean_cycles / expected - 1.0).abs() < 0.03,
        "mean gap {mean_cycles:.1} cycles, expected about {expected:.1}"
    );
    // Exact Poisson arrivals at the same rate keep the nominal mean.
    let p = send_times(LoadMode::Open { rate_mrps }, 20_000);
    let poisson = (p[p.len() - 1] - p[0]) as f64 / (p.len() - 1) as f64 / cycle_fs as f64;
    assert!(
        (poisson / 350.0 - 1.0).abs() < 0.03,
        "Poisson mean gap {poisson:.1}"
    );
}
