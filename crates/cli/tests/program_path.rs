//! Where a program file lies does not change what it computes: argv[0] is
//! its file name, not its path (argv sits on the guest's stack, so a longer
//! path would move the stack and change cache behaviour and cycle counts).

use std::path::PathBuf;
use std::process::Command;

fn sdk_elf(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../sdk/build/{name}.elf"));
    assert!(p.exists(), "{} missing: make -C sdk", p.display());
    p
}

/// stdout and the stats JSON of `nanopu run ELF -- x y`.
fn run(elf: &std::path::Path, stats: &std::path::Path) -> (String, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_nanopu"))
        .arg("run")
        .arg(elf)
        .arg("--stats-json")
        .arg(stats)
        .args(["--", "x", "y"])
        .output()
        .expect("nanopu runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(stats).unwrap()).unwrap();
    // Host-time figures.
    for k in ["mips", "wall_s"] {
        json.as_object_mut().unwrap().remove(k);
    }
    (String::from_utf8(out.stdout).unwrap(), json)
}

#[test]
fn argv0_is_the_file_name_wherever_the_file_is() {
    let elf = sdk_elf("hello");
    let root = std::env::temp_dir().join(format!("nanopu-program-path-{}", std::process::id()));
    let deep = root.join("a/much/longer/directory/path/than/the/sdk/build/directory/has");
    std::fs::create_dir_all(&deep).unwrap();
    let moved = deep.join("hello.elf");
    std::fs::copy(&elf, &moved).unwrap();
    let (out_a, stats_a) = run(&elf, &deep.join("a.json"));
    let (out_b, stats_b) = run(&moved, &deep.join("b.json"));
    assert!(out_a.contains("argc = 3, argv[0] = hello.elf"), "{out_a}");
    assert_eq!(out_a, out_b);
    assert_eq!(
        stats_a, stats_b,
        "same program, same arguments, same cycles"
    );
    // Only the test's own directory (`ancestors().nth(12)` of `deep` was the
    // system's temporary directory itself).
    let _ = std::fs::remove_dir_all(&root);
}
