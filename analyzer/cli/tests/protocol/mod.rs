//! What the tune tests share.

/// `args` with the measurement protocol of a test: a `tune` does not wait for a quiet machine
/// (tests run beside each other) and runs each distribution once unless `--repeat` is given.
/// The protocol's defaults have their own test.
pub fn test_protocol<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut args = args.to_vec();
    if args.first() != Some(&"tune") {
        return args;
    }
    let at = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    let mut extra = vec!["--wait-quiet", "0s"];
    if !args.contains(&"--repeat") {
        extra.extend(["--repeat", "1"]);
    }
    args.splice(at..at, extra);
    args
}

/// Checks the compared distributions' names: the answer and the spectrum in order, then
/// `searched` when the model with every sample predicted another distribution faster than the
/// search's pick. That pick then has other rows than the answer and is predicted slower. `best`
/// is the answer.
pub fn check_compared_names(doc: &serde_json::Value) {
    let distributions = doc["distributions"].as_array().expect("distributions");
    let names: Vec<&str> = distributions
        .iter()
        .map(|d| d["name"].as_str().expect("a name"))
        .collect();
    let spectrum = ["best", "block", "balanced", "in-core", "in-core-balanced"];
    assert_eq!(doc["best"]["rows"], distributions[0]["rows"]);
    match names.len() {
        5 => assert_eq!(names, spectrum),
        6 => {
            assert_eq!(names[..5], spectrum);
            assert_eq!(names[5], "searched");
            let (best, searched) = (&distributions[0], &distributions[5]);
            assert_ne!(best["rows"], searched["rows"]);
            assert!(
                best["predicted_s"].as_f64() < searched["predicted_s"].as_f64(),
                "the answer must be predicted faster than the search's pick: {best} {searched}"
            );
        }
        _ => panic!("unexpected distributions: {names:?}"),
    }
}
