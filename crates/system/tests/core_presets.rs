//! `[node.core] preset`: a named core's keys are the defaults of
//! `[node.core]`, keys written beside the preset override them, and a bad
//! name is an error naming the key.

use nanopu_core::{CoreModel, CorePreset};
use nanopu_system::Config;

#[test]
fn a_preset_sets_its_keys_and_written_keys_override_them() {
    let c = Config::parse("[node.core]\npreset = \"cortex-a57\"\n").unwrap();
    assert_eq!(c.node.core, CorePreset::CortexA57.config());
    let c = Config::parse(
        "[node.core]\npreset = \"broadwell\"\nl1d_mshrs = 4\n[node.core.ooo]\nrob_entries = 64\n",
    )
    .unwrap();
    let mut want = CorePreset::Broadwell.config();
    want.l1d_mshrs = 4;
    want.ooo.rob_entries = 64;
    assert_eq!(c.node.core, want);
    // The written configuration parses back to itself.
    assert_eq!(Config::parse(&c.to_toml()).unwrap(), c);
}

#[test]
fn the_model_alone_selects_the_default_window() {
    let c = Config::parse("[node.core]\nmodel = \"out-of-order\"\nl1d_mshrs = 2\n").unwrap();
    assert_eq!(c.node.core.model, CoreModel::OutOfOrder);
    assert_eq!(c.node.core.ooo, nanopu_core::OooConfig::default());
    // The in-order default writes none of the new keys.
    assert!(!Config::default().to_toml().contains("ooo"));
}

#[test]
fn bad_presets_and_windows_are_named() {
    let e = Config::parse("[node.core]\npreset = \"pentium\"\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("node.core.preset") && e.contains("line 2"),
        "{e}"
    );
    let e = Config::parse(
        "[node.core]\nmodel = \"out-of-order\"\nl1d_mshrs = 2\n[node.core.ooo]\nrob_entries = 0\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("rob_entries"), "{e}");
    let e = Config::parse("[node.core]\nmodel = \"out-of-order\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("l1d_mshrs"), "{e}");
}
