//! The fleet playbook (deploy/fleet.yml) for real: deploy/tests/fleet-sshd.sh
//! runs ansible-playbook against a real sshd on 127.0.0.1 under several
//! inventory names, with this build's driver, and checks the fleet dataset
//! that comes back (and `analysis fleet` over it, once that exists).
//!
//! The script needs root, ansible-playbook and /usr/sbin/sshd (Debian's
//! ansible and openssh-server, which .ci/run installs). Without them it
//! skips with exit 0 and a printed reason, unless `PERF_TESTS=require`
//! (inherited from this process), when it fails. It runs two quick
//! experiment sweeps: about two to four minutes.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::process::Command;

#[test]
fn fleet_playbook_over_real_ssh() {
    let driver = Path::new(env!("CARGO_BIN_EXE_driver"));
    // `analysis` is built beside the driver by `cargo test --workspace`.
    let analysis = driver.with_file_name("analysis");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("bash")
        .arg(root.join("deploy/tests/fleet-sshd.sh"))
        .current_dir(&root)
        .env("DRIVER", driver)
        .env("ANALYSIS", &analysis)
        .output()
        .expect("bash runs deploy/tests/fleet-sshd.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        out.status.success(),
        "deploy/tests/fleet-sshd.sh failed ({}); its FAIL lines:\n{}",
        out.status,
        stdout
            .lines()
            .chain(stderr.lines())
            .filter(|l| l.starts_with("FAIL"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
