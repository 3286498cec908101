//! Helpers shared by the runtime's integration tests.

#![allow(dead_code)]

pub mod reference;

use std::path::{Path, PathBuf};

/// Write a cluster.toml with `nodes` as (count, cpu, memory) and the given network.
pub fn cluster_file(
    dir: &Path,
    latency: &str,
    bandwidth: &str,
    nodes: &[(usize, f64, &str)],
) -> PathBuf {
    let mut text = format!("[network]\nlatency = \"{latency}\"\nbandwidth = \"{bandwidth}\"\n");
    for (count, cpu, memory) in nodes {
        text.push_str(&format!(
            "\n[[node]]\ncount = {count}\ncpu = {cpu}\nmemory = \"{memory}\"\ndisk_read = \"500MB/s\"\n\
             disk_write = \"400MB/s\"\ndisk_latency = \"0s\"\n"
        ));
    }
    let path = dir.join("cluster.toml");
    std::fs::write(&path, text).unwrap();
    path
}
