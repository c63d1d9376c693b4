use super::*;

fn change(path: &Path, old: &str, new: &str) -> SettingChange {
    SettingChange {
        path: path.display().to_string(),
        old: old.into(),
        new: new.into(),
        restored: false,
    }
}

fn state(changes: Vec<SettingChange>) -> StateFile {
    StateFile {
        pid: 4242,
        results_dir: "/tmp/r".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        changes,
    }
}

#[test]
fn leftover_is_restored_and_the_state_file_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let sysctl = tmp.path().join("rate");
    std::fs::write(&sysctl, "150000\n").unwrap();
    let dir = tmp.path().join("state");
    write_state(&dir, &state(vec![change(&sysctl, "100000", "150000")])).unwrap();
    let r = handle_leftovers(&dir, OnLeftover::Restore).unwrap();
    assert_eq!(r.items.len(), 1);
    assert_eq!(r.items[0].action, LeftoverAction::Restored);
    assert_eq!(std::fs::read_to_string(&sysctl).unwrap(), "100000");
    assert!(!dir.join(STATE_FILE).exists());
    let line = &r.lines()[0];
    assert!(
        line.contains("restored") && line.contains("100000") && line.contains("4242"),
        "{line}"
    );
    // Nothing left: a second command finds nothing.
    assert!(
        handle_leftovers(&dir, OnLeftover::Restore)
            .unwrap()
            .items
            .is_empty()
    );
}

#[test]
fn leave_keeps_the_value_and_the_state_file() {
    let tmp = tempfile::tempdir().unwrap();
    let sysctl = tmp.path().join("rate");
    std::fs::write(&sysctl, "150000").unwrap();
    let dir = tmp.path().join("state");
    write_state(&dir, &state(vec![change(&sysctl, "100000", "150000")])).unwrap();
    let r = handle_leftovers(&dir, OnLeftover::Leave).unwrap();
    assert_eq!(r.items[0].action, LeftoverAction::Left);
    assert_eq!(std::fs::read_to_string(&sysctl).unwrap(), "150000");
    assert!(r.lines()[0].contains("--leave-settings"));
    assert!(read_state(&dir).unwrap().is_some());
}

#[test]
fn a_third_value_is_not_overwritten_and_the_original_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    std::fs::write(&a, "120000").unwrap(); // lowered since by the kernel
    std::fs::write(&b, "25").unwrap(); // never actually changed
    let dir = tmp.path().join("state");
    write_state(
        &dir,
        &state(vec![change(&a, "100000", "150000"), change(&b, "25", "50")]),
    )
    .unwrap();
    let r = handle_leftovers(&dir, OnLeftover::Restore).unwrap();
    let by_path = |p: &Path| {
        r.items
            .iter()
            .find(|l| l.change.path == p.display().to_string())
            .unwrap()
            .action
            .clone()
    };
    assert_eq!(
        by_path(&a),
        LeftoverAction::ChangedSince {
            current: "120000".into()
        }
    );
    assert_eq!(by_path(&b), LeftoverAction::AlreadyOriginal);
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "120000");
    assert!(r.lines().iter().any(|l| l.contains("echo 100000")));
    assert!(!dir.join(STATE_FILE).exists());
}

#[test]
fn a_failed_restore_keeps_the_state_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state");
    let gone = tmp.path().join("no-such-dir").join("rate");
    write_state(&dir, &state(vec![change(&gone, "1", "2")])).unwrap();
    let r = handle_leftovers(&dir, OnLeftover::Restore).unwrap();
    assert!(matches!(r.items[0].action, LeftoverAction::Failed { .. }));
    assert!(read_state(&dir).unwrap().is_some());
}

#[test]
fn lock_is_exclusive_and_names_its_holder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state");
    let lock = SweepLock::acquire(&dir, Path::new("/data/results/a")).unwrap();
    // flock locks belong to the open file description: a second open in
    // this process conflicts like another process would.
    let e = SweepLock::acquire(&dir, Path::new("/data/results/b")).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains(&format!("pid {}", std::process::id())) && msg.contains("/data/results/a"),
        "{msg}"
    );
    // While the lock is held, state belongs to the sweep: not touched.
    let sysctl = tmp.path().join("rate");
    std::fs::write(&sysctl, "150000").unwrap();
    write_state(&dir, &state(vec![change(&sysctl, "100000", "150000")])).unwrap();
    let r = handle_leftovers(&dir, OnLeftover::Restore).unwrap();
    assert_eq!(r.items[0].action, LeftoverAction::Running);
    assert_eq!(std::fs::read_to_string(&sysctl).unwrap(), "150000");
    drop(lock);
    assert!(SweepLock::acquire(&dir, Path::new("/data/results/b")).is_ok());
}

#[test]
fn failed_atomic_write_leaves_no_temporary() {
    let tmp = tempfile::tempdir().unwrap();
    // The rename target is a non-empty directory: rename fails.
    let target = tmp.path().join("state.json");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("x"), "x").unwrap();
    assert!(write_atomic(&target, b"{}").is_err());
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["state.json".to_string()]);
}

#[test]
fn corrupt_state_file_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join(STATE_FILE), "{not json").unwrap();
    let e = read_state(tmp.path()).unwrap_err().to_string();
    assert!(e.contains("state.json") && e.contains("old"), "{e}");
}
