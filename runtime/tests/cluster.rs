//! `cluster.toml` parsing (DESIGN §5): the contract format, units, and one error test per kind
//! of mistake, each checking that the message names the file, the line and column, and the
//! field.

use std::path::Path;

use mheta_runtime::cluster::ClusterError;
use mheta_runtime::format::ClusterSpec;

const PATH: &str = "conf/cluster.toml";

const VALID: &str = r#"
[network]
latency = "50us"          # one-way, per message
bandwidth = "1GB/s"

[[node]]
count = 2
cpu = 0.5
memory = "48MiB"
disk_read = "200MB/s"
disk_write = "150MB/s"
disk_latency = "2ms"

[[node]]
cpu = 1
memory = "1GB"
disk_read = "1GiB/s"
disk_write = "500MB/s"
disk_latency = "0s"
"#;

fn parse(text: &str) -> Result<ClusterSpec, ClusterError> {
    ClusterSpec::from_toml_str(text, Path::new(PATH))
}

/// Parse `text`, expect an error, and return (line, column, field, message, display).
fn error(text: &str) -> (usize, usize, Option<String>, String, String) {
    let err = parse(text).expect_err("the file should be rejected");
    let display = err.to_string();
    match err {
        ClusterError::Invalid {
            path,
            line,
            column,
            field,
            message,
        } => {
            assert_eq!(path, Path::new(PATH));
            assert!(
                display.starts_with(&format!("{PATH}:{line}:{column}: ")),
                "{display}"
            );
            (line, column, field, message, display)
        }
        other => panic!("unexpected error kind: {other}"),
    }
}

/// Replace one line of the valid file.
fn with(old: &str, new: &str) -> String {
    assert!(VALID.contains(old), "fixture has no `{old}`");
    VALID.replacen(old, new, 1)
}

#[test]
fn the_design_example_expands_one_node_per_rank_in_si_units() {
    let cluster = parse(VALID).unwrap();
    assert_eq!(cluster.network.latency_s, 50e-6);
    assert_eq!(cluster.network.bandwidth_bps, 1e9);
    assert_eq!(cluster.nodes.len(), 3);
    let slow = cluster.nodes[0];
    assert_eq!(cluster.nodes[1], slow);
    assert_eq!(slow.cpu, 0.5);
    assert_eq!(slow.memory_bytes, 48 * 1024 * 1024);
    assert_eq!(slow.disk_read_bps, 200e6);
    assert_eq!(slow.disk_write_bps, 150e6);
    assert_eq!(slow.disk_latency_s, 2e-3);
    let fast = cluster.nodes[2];
    assert_eq!(fast.cpu, 1.0);
    assert_eq!(fast.memory_bytes, 1_000_000_000);
    assert_eq!(fast.disk_read_bps, 1073741824.0);
    assert_eq!(fast.disk_latency_s, 0.0);
}

#[test]
fn load_reads_the_file_and_names_it_when_missing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster.toml");
    std::fs::write(&path, VALID).unwrap();
    assert_eq!(ClusterSpec::load(&path).unwrap(), parse(VALID).unwrap());

    let missing = dir.path().join("nope.toml");
    let err = ClusterSpec::load(&missing).unwrap_err();
    assert!(matches!(err, ClusterError::Read { .. }));
    assert!(err.to_string().contains("nope.toml"), "{err}");
}

#[test]
fn this_machine_is_p_unbounded_copies_and_survives_json() {
    let cluster = ClusterSpec::this_machine(4);
    assert_eq!(cluster.nodes.len(), 4);
    assert!(cluster
        .nodes
        .iter()
        .all(|n| n.cpu == 1.0 && n.memory_bytes == u64::MAX));
    let json = serde_json::to_string(&cluster).unwrap();
    let back: ClusterSpec = serde_json::from_str(&json).unwrap();
    assert_eq!(back, cluster);
}

#[test]
fn messages_read_well() {
    let (_, _, _, _, display) = error(&with("memory = \"48MiB\"", "memory = \"48Mb\""));
    assert_eq!(
        display,
        "conf/cluster.toml:9:10: field `node.memory`: unknown size unit `Mb` in \"48Mb\"; expected \
         one of B, KB, MB, GB, TB, KiB, MiB, GiB, TiB (bits are not accepted: write bytes, e.g. \
         125MB/s for 1Gbit/s)"
    );
}

#[test]
fn syntax_error_points_at_the_line() {
    let (line, _, _, message, _) = error(&with("cpu = 0.5", "cpu = = 0.5"));
    assert_eq!(line, 8);
    assert!(!message.is_empty());
}

#[test]
fn unknown_field_is_named() {
    let (line, column, field, message, _) = error(&with("cpu = 0.5", "cpus = 0.5"));
    assert_eq!((line, column), (8, 1));
    assert_eq!(field.as_deref(), Some("cpus"));
    assert!(message.contains("unknown field"), "{message}");

    let (line, _, field, _, _) = error(&with("[network]", "[network]\nlatncy = \"1us\""));
    assert_eq!(line, 3);
    assert_eq!(field.as_deref(), Some("latncy"));

    let (_, _, field, _, _) = error(&format!("{VALID}\n[disk]\nx = 1\n"));
    assert_eq!(field.as_deref(), Some("disk"));
}

#[test]
fn missing_field_is_named() {
    let (line, _, field, message, display) = error(&with("disk_write = \"150MB/s\"\n", ""));
    assert_eq!(field.as_deref(), Some("disk_write"));
    assert!(message.contains("missing field"), "{message}");
    assert!(display.contains("disk_write"), "{display}");
    // The error points into the first [[node]] table.
    assert!((6..=12).contains(&line), "line {line}");

    let no_network = with(
        "[network]\nlatency = \"50us\"          # one-way, per message\nbandwidth = \"1GB/s\"\n",
        "",
    );
    let (_, _, field, _, _) = error(&no_network);
    assert_eq!(field.as_deref(), Some("network"));
}

#[test]
fn no_nodes_is_an_error() {
    let (_, _, field, message, _) = error("[network]\nlatency = \"1us\"\nbandwidth = \"1GB/s\"\n");
    assert_eq!(field.as_deref(), Some("node"));
    assert!(message.contains("[[node]]"), "{message}");
}

#[test]
fn wrong_units_are_located_and_named() {
    let cases = [
        (
            "latency = \"50us\"",
            "latency = \"50 furlongs\"",
            3,
            "network.latency",
            "unknown time unit",
        ),
        (
            "bandwidth = \"1GB/s\"",
            "bandwidth = \"1Gb/s\"",
            4,
            "network.bandwidth",
            "bits",
        ),
        (
            "memory = \"48MiB\"",
            "memory = \"48Mi\"",
            9,
            "node.memory",
            "unknown size unit",
        ),
        (
            "disk_read = \"200MB/s\"",
            "disk_read = \"200MB\"",
            10,
            "node.disk_read",
            "per second",
        ),
        (
            "disk_latency = \"2ms\"",
            "disk_latency = \"2\"",
            12,
            "node.disk_latency",
            "no unit",
        ),
    ];
    for (old, new, want_line, want_field, want_message) in cases {
        let (line, column, field, message, display) = error(&with(old, new));
        assert_eq!(line, want_line, "{display}");
        let key_len = new.find('=').unwrap() + 2;
        assert_eq!(column, key_len + 1, "column of the value: {display}");
        assert_eq!(field.as_deref(), Some(want_field), "{display}");
        assert!(message.contains(want_message), "{display}");
        assert!(
            display.contains(&format!("field `{want_field}`")),
            "{display}"
        );
    }
}

#[test]
fn wrong_types_are_named() {
    let (line, _, field, message, _) = error(&with("memory = \"48MiB\"", "memory = 48"));
    assert_eq!((line, field.as_deref()), (9, Some("node.memory")));
    assert!(message.contains("quoted string with a unit"), "{message}");

    let (_, _, field, message, _) = error(&with("cpu = 0.5", "cpu = \"fast\""));
    assert_eq!(field.as_deref(), Some("node.cpu"));
    assert!(message.contains("relative CPU power"), "{message}");

    let (_, _, field, message, _) = error(&with("count = 2", "count = 2.5"));
    assert_eq!(field.as_deref(), Some("node.count"));
    assert!(message.contains("whole number"), "{message}");
}

#[test]
fn zero_and_negative_values_are_rejected() {
    let cases = [
        ("cpu = 0.5", "cpu = 0", "node.cpu", "positive"),
        ("cpu = 0.5", "cpu = -1.5", "node.cpu", "positive"),
        ("count = 2", "count = 0", "node.count", "between 1 and"),
        ("count = 2", "count = -3", "node.count", "between 1 and"),
        (
            "memory = \"48MiB\"",
            "memory = \"0B\"",
            "node.memory",
            "at least one byte",
        ),
        (
            "disk_write = \"150MB/s\"",
            "disk_write = \"0MB/s\"",
            "node.disk_write",
            "positive",
        ),
        (
            "disk_read = \"200MB/s\"",
            "disk_read = \"-5MB/s\"",
            "node.disk_read",
            "positive",
        ),
        (
            "disk_latency = \"2ms\"",
            "disk_latency = \"-2ms\"",
            "node.disk_latency",
            "negative",
        ),
        (
            "latency = \"50us\"",
            "latency = \"-1us\"",
            "network.latency",
            "negative",
        ),
    ];
    for (old, new, want_field, want_message) in cases {
        let (_, _, field, message, display) = error(&with(old, new));
        assert_eq!(field.as_deref(), Some(want_field), "{display}");
        assert!(message.contains(want_message), "{display}");
    }
}

#[test]
fn huge_counts_are_rejected_not_allocated() {
    let (_, _, field, _, _) = error(&with("count = 2", "count = 1000000000000"));
    assert_eq!(field.as_deref(), Some("node.count"));
}

/// The valid file with `tables` (`[[node.load]]` tables) after its first node.
fn with_load(tables: &str) -> String {
    with(
        "disk_latency = \"2ms\"\n",
        &format!("disk_latency = \"2ms\"\n{tables}"),
    )
}

#[test]
fn a_load_schedule_applies_to_every_node_of_its_table() {
    let text = with_load(
        "[[node.load]]\nat_iteration = 10\ncpu = 0.75\n\
         [[node.load]]\nat_iteration = 20\nmemory = \"8MiB\"\ncpu = 0\n",
    );
    let cluster = parse(&text).unwrap();
    use mheta_runtime::format::{LoadAt, LoadStep};
    let steps = vec![
        LoadStep {
            at: LoadAt::Iteration(10),
            cpu_share: Some(0.75),
            memory_bytes: None,
        },
        LoadStep {
            at: LoadAt::Iteration(20),
            cpu_share: Some(0.0),
            memory_bytes: Some(8 << 20),
        },
    ];
    assert_eq!(cluster.loads, vec![steps.clone(), steps, Vec::new()]);
    assert!(cluster.check().is_ok());
    // It survives the JSON files; a cluster without load writes no `loads` at all.
    let json = serde_json::to_string(&cluster).unwrap();
    assert_eq!(serde_json::from_str::<ClusterSpec>(&json).unwrap(), cluster);
    let plain = serde_json::to_string(&parse(VALID).unwrap()).unwrap();
    assert!(!plain.contains("loads"), "{plain}");

    let by_time = parse(&with_load("[[node.load]]\nat = \"1.5s\"\ncpu = 0.5\n")).unwrap();
    assert_eq!(by_time.load_of(1)[0].at, LoadAt::Seconds(1.5));
    assert!(by_time.load_of(2).is_empty());
    // The least power a node has: its own less the largest share its load takes.
    for r in 0..3 {
        let node = cluster.nodes[r].cpu;
        let expected = if r < 2 { node * 0.25 } else { node };
        assert_eq!(cluster.least_cpu(r), expected, "rank {r}");
    }
}

#[test]
fn every_load_mistake_is_located_and_named() {
    let cases = [
        ("[[node.load]]\ncpu = 0.5\n", 13, "node.load.at", "missing"),
        (
            "[[node.load]]\nat = \"1s\"\nat_iteration = 3\ncpu = 0.5\n",
            15,
            "node.load.at_iteration",
            "not both",
        ),
        (
            "[[node.load]]\nat = \"-1s\"\ncpu = 0.5\n",
            14,
            "node.load.at",
            "negative",
        ),
        (
            "[[node.load]]\nat = \"1 fortnight\"\ncpu = 0.5\n",
            14,
            "node.load.at",
            "unit",
        ),
        (
            "[[node.load]]\nat_iteration = -2\ncpu = 0.5\n",
            14,
            "node.load.at_iteration",
            "negative",
        ),
        (
            "[[node.load]]\nat_iteration = \"2\"\ncpu = 0.5\n",
            14,
            "node.load.at_iteration",
            "iteration number",
        ),
        (
            "[[node.load]]\nat_iteration = 2\n",
            13,
            "node.load",
            "changes nothing",
        ),
        (
            "[[node.load]]\nat_iteration = 2\ncpu = 1\n",
            15,
            "node.load.cpu",
            "up to (not including) 1",
        ),
        (
            "[[node.load]]\nat_iteration = 2\ncpu = -0.5\n",
            15,
            "node.load.cpu",
            "share",
        ),
        (
            "[[node.load]]\nat_iteration = 2\ncpu = \"half\"\n",
            15,
            "node.load.cpu",
            "share of the node's CPU",
        ),
        (
            "[[node.load]]\nat_iteration = 2\nmemory = \"48MiB\"\n",
            15,
            "node.load.memory",
            "takes all of the node's memory",
        ),
        (
            "[[node.load]]\nat_iteration = 2\nmemory = 8\n",
            15,
            "node.load.memory",
            "size",
        ),
        (
            "[[node.load]]\nat_iteration = 5\ncpu = 0.5\n[[node.load]]\nat_iteration = 5\ncpu = 0\n",
            17,
            "node.load.at_iteration",
            "must come after",
        ),
        (
            "[[node.load]]\nat_iteration = 5\ncpu = 0.5\n[[node.load]]\nat = \"9s\"\ncpu = 0\n",
            17,
            "node.load.at",
            "mixes times and iterations",
        ),
        (
            "[[node.load]]\nat_iteration = 5\ncpus = 0.5\n",
            15,
            "cpus",
            "unknown field",
        ),
    ];
    for (tables, want_line, want_field, want_message) in cases {
        let (line, _, field, message, display) = error(&with_load(tables));
        assert_eq!(field.as_deref(), Some(want_field), "{display}");
        assert!(message.contains(want_message), "{display}");
        assert_eq!(line, want_line, "{display}");
    }
}

#[test]
fn check_rejects_load_the_parser_would_reject() {
    use mheta_runtime::format::{LoadAt, LoadStep};
    let mut cluster = parse(VALID).unwrap();
    let step = |at, cpu_share, memory_bytes| LoadStep {
        at,
        cpu_share,
        memory_bytes,
    };
    let cases = [
        (
            vec![vec![step(LoadAt::Iteration(1), Some(1.5), None)]; 3],
            "loads[0][0].cpu_share",
        ),
        (
            vec![vec![step(LoadAt::Seconds(-1.0), Some(0.5), None)]; 3],
            "loads[0][0].at.seconds",
        ),
        (
            vec![vec![step(LoadAt::Iteration(1), None, Some(48 << 20))]; 3],
            "loads[0][0].memory_bytes",
        ),
        (
            vec![
                vec![
                    step(LoadAt::Iteration(4), Some(0.5), None),
                    step(LoadAt::Seconds(9.0), Some(0.0), None),
                ];
                3
            ],
            "loads[0][1].at",
        ),
        (vec![Vec::new()], "loads"),
    ];
    for (loads, want) in cases {
        cluster.loads = loads;
        let (field, message) = cluster.check().unwrap_err();
        assert_eq!(field, want, "{message}");
    }
}

/// `ranks = k`: the table's nodes each run k ranks, each with a k-th of the node's CPU power,
/// memory and disk bandwidths (the per-call latency is the node's).
#[test]
fn ranks_share_their_node() {
    let cluster = parse(&with("count = 2\n", "count = 2\nranks = 3\n")).unwrap();
    assert_eq!(cluster.nodes.len(), 2 * 3 + 1);
    let share = cluster.nodes[0];
    assert!(cluster.nodes[..6].iter().all(|n| *n == share));
    assert_eq!(share.cpu, 0.5 / 3.0);
    assert_eq!(share.memory_bytes, 48 * 1024 * 1024 / 3);
    assert_eq!(share.disk_read_bps, 200e6 / 3.0);
    assert_eq!(share.disk_write_bps, 150e6 / 3.0);
    assert_eq!(share.disk_latency_s, 2e-3);
    assert_eq!(cluster.nodes[6], parse(VALID).unwrap().nodes[2]);
    // `ranks = 1` is the default.
    let one = parse(&with("count = 2\n", "count = 2\nranks = 1\n")).unwrap();
    assert_eq!(one, parse(VALID).unwrap());
}

/// Two ranks on one node of power p are two nodes of power p/2 (and half the memory and disk
/// each, and half of what a load takes of the memory): the same expanded description, so the
/// runtime, the model and the out-of-core placement see the same ranks.
#[test]
fn two_ranks_on_a_node_are_two_half_nodes() {
    let text =
        |count: u32, ranks: u32, cpu: f64, memory: &str, rates: (&str, &str), taken: &str| {
            format!(
            "[network]\nlatency = \"60us\"\nbandwidth = \"125MB/s\"\n[[node]]\ncount = {count}\n\
             ranks = {ranks}\ncpu = {cpu}\nmemory = \"{memory}\"\ndisk_read = \"{}\"\n\
             disk_write = \"{}\"\ndisk_latency = \"8ms\"\n[[node.load]]\nat_iteration = 3\n\
             cpu = 0.5\nmemory = \"{taken}\"\n",
            rates.0, rates.1
        )
        };
    let shared = parse(&text(1, 2, 0.5, "8MiB", ("50MB/s", "40MB/s"), "4MiB")).unwrap();
    let halves = parse(&text(2, 1, 0.25, "4MiB", ("25MB/s", "20MB/s"), "2MiB")).unwrap();
    assert_eq!(shared, halves);
    assert_eq!(shared.nodes.len(), 2);
    assert_eq!(shared.loads[1][0].memory_bytes, Some(2 << 20));
}

#[test]
fn bad_ranks_are_located_and_named() {
    for (new, expect) in [
        ("ranks = 0", "between 1 and"),
        ("ranks = -2", "between 1 and"),
        ("ranks = 1.5", "whole number of ranks"),
        ("ranks = \"2\"", "whole number of ranks"),
        ("ranks = 40000", "more than the"),
    ] {
        let (line, _, field, message, _) =
            error(&with("count = 2\n", &format!("count = 2\n{new}\n")));
        assert_eq!(field.as_deref(), Some("node.ranks"), "{new}");
        assert_eq!(line, 8, "{new}");
        assert!(message.contains(expect), "{new}: {message}");
    }
    // 11 bytes for 2 ranks are 5 each; a load taking 10 of the 11 takes a rank's 5.
    let squeezed = with_load("[[node.load]]\nat_iteration = 1\nmemory = \"10B\"\n")
        .replacen("count = 2\n", "count = 2\nranks = 2\n", 1)
        .replacen("\"48MiB\"", "\"11B\"", 1);
    let (_, _, field, message, _) = error(&squeezed);
    assert_eq!(field.as_deref(), Some("node.ranks"));
    assert!(message.contains("leaves a rank none of its 5"), "{message}");
    let tiny = with("count = 2\n", "count = 1\nranks = 3\n").replacen("\"48MiB\"", "\"2B\"", 1);
    let (_, _, field, message, _) = error(&tiny);
    assert_eq!(field.as_deref(), Some("node.ranks"));
    assert!(message.contains("cannot share"), "{message}");
}
