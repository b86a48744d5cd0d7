//! Records how the binary was built, so that `nanopu bench` can say it:
//! a profile-guided build (`scripts/pgo-build.sh`) runs 10-35 % faster
//! than a plain one, and a debug build's figures mean nothing.

fn main() {
    // Cargo passes the flags of this build to build scripts, separated by 0x1f.
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let has = |what: &str| flags.split('\x1f').any(|f| f.contains(what));
    let kind = if has("profile-use") {
        "profile-guided"
    } else if has("profile-generate") {
        "instrumented"
    } else {
        "plain"
    };
    let opt_level = std::env::var("OPT_LEVEL").unwrap_or_else(|_| "?".into());
    println!("cargo:rustc-env=NANOPU_BUILD_KIND={kind}");
    println!("cargo:rustc-env=NANOPU_BUILD_OPT_LEVEL={opt_level}");
    // Flags and profile changes rebuild the package anyway; sources do not
    // change what this script finds.
    println!("cargo:rerun-if-changed=build.rs");
}
