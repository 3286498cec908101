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
