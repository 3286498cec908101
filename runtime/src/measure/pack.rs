//! A rank's records as bytes, for backends whose ranks are separate processes: the `mpi` backend
//! packs every rank's [`RankRecords`], gathers the bytes to rank 0 and unpacks them there.
//!
//! Variable ids are interned per process ([`crate::hooks::register_var`]), so the packed form
//! carries the name of every variable its I/O records use, and [`unpack`] maps each to the id the
//! unpacking process gives that name. Groups of ranks (the members of a communicator a
//! collective ran on, [`crate::hooks::register_group`]) travel the same way, by their members.
//! Times are shifted by the rank's clock offset to rank 0 while packing, so that all ranks'
//! records share rank 0's time base.
//!
//! Layout (little-endian): the magic `MHRR`, a format version, the variable table, the group
//! table, the records (fixed-size fields), the arrays and the optional I/O calibration.

use std::collections::BTreeMap;

use crate::comm::Traffic;
use crate::format::{ArrayInfo, StageKey};
use crate::hooks::{
    group_members, register_group, register_var, var_name, RankRecords, Record, RecordKind, VarId,
    NONE,
};
use crate::ooc::DiskCosts;

const MAGIC: &[u8; 4] = b"MHRR";
const VERSION: u32 = 3;

const KINDS: [RecordKind; 9] = [
    RecordKind::Iteration,
    RecordKind::Section,
    RecordKind::Tile,
    RecordKind::Stage,
    RecordKind::Event,
    RecordKind::Group,
    RecordKind::Io,
    RecordKind::Comm,
    RecordKind::Copy,
];

fn kind_code(kind: RecordKind) -> u8 {
    KINDS
        .iter()
        .position(|&k| k == kind)
        .expect("KINDS lists every record kind") as u8
}

/// Pack `rr`, adding `offset_s` to every begin and end time.
pub fn pack(rr: &RankRecords, offset_s: f64) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(64 + rr.records.len() * 96));
    w.0.extend_from_slice(MAGIC);
    w.u32(VERSION);
    let vars: BTreeMap<u32, String> = rr
        .records
        .iter()
        .filter(|r| r.kind.names_var())
        .map(|r| {
            let name = var_name(VarId(r.id)).unwrap_or_else(|| format!("var{}", r.id));
            (r.id, name)
        })
        .collect();
    w.len(vars.len());
    for (id, name) in &vars {
        w.u32(*id);
        w.str(name);
    }
    let groups: BTreeMap<u32, Vec<u32>> = rr
        .records
        .iter()
        .filter_map(|r| r.group_id())
        .map(|g| (g.0, group_members(g).unwrap_or_default()))
        .collect();
    w.len(groups.len());
    for (id, members) in &groups {
        w.u32(*id);
        w.len(members.len());
        members.iter().for_each(|&m| w.u32(m));
    }
    w.len(rr.records.len());
    for r in &rr.records {
        w.0.push(kind_code(r.kind));
        w.u32(r.id);
        w.u32(r.aux);
        w.u32(r.key.section);
        w.u32(r.key.tile.map_or(u32::MAX, |t| t));
        w.0.push(u8::from(r.key.tile.is_some()));
        w.u32(r.key.stage);
        w.0.push(u8::from(r.in_stage));
        w.u32(r.event);
        w.u32(r.peer);
        w.u32(r.group);
        w.u32(r.traffic.messages_sent);
        w.u32(r.traffic.messages_received);
        w.u64(r.traffic.bytes_sent);
        w.u64(r.traffic.bytes_received);
        w.f64(r.traffic.blocked_s);
        w.u64(r.bytes);
        w.f64(r.begin_s + offset_s);
        w.f64(r.end_s + offset_s);
        w.u32(r.open);
        w.u32(r.close);
        w.u32(r.repeats);
    }
    w.len(rr.arrays.len());
    for a in &rr.arrays {
        w.str(&a.name);
        w.u64(a.bytes_per_row);
        w.0.push(u8::from(a.distributed));
        w.0.push(u8::from(a.read_only));
    }
    match &rr.calibration {
        None => w.0.push(0),
        Some(c) => {
            w.0.push(1);
            for x in [
                c.read_overhead_s,
                c.write_overhead_s,
                c.async_overhead_s,
                c.read_per_byte_s,
                c.write_per_byte_s,
            ] {
                w.f64(x);
            }
        }
    }
    w.0
}

/// Unpack bytes made by [`pack`], interning the variables in this process.
pub fn unpack(bytes: &[u8]) -> Result<RankRecords, String> {
    let mut r = Reader { bytes, at: 0 };
    if r.take(4)? != MAGIC {
        return Err("not packed rank records (bad magic)".into());
    }
    let version = r.u32()?;
    if version != VERSION {
        return Err(format!(
            "packed rank records of version {version}, expected {VERSION}"
        ));
    }
    let mut vars = BTreeMap::new();
    for _ in 0..r.len()? {
        let id = r.u32()?;
        let name = r.str()?;
        vars.insert(id, register_var(&name).0);
    }
    let mut groups = BTreeMap::new();
    for _ in 0..r.len()? {
        let id = r.u32()?;
        let len = r.len()?;
        let members = (0..len).map(|_| r.u32()).collect::<Result<Vec<_>, _>>()?;
        groups.insert(id, register_group(&members).0);
    }
    let n = r.len()?;
    let mut records = Vec::with_capacity(n.min(bytes.len() / 64));
    for _ in 0..n {
        let code = r.u8()?;
        let kind = *KINDS
            .get(code as usize)
            .ok_or_else(|| format!("unknown record kind {code}"))?;
        let mut id = r.u32()?;
        if kind.names_var() {
            id = *vars
                .get(&id)
                .ok_or_else(|| format!("I/O record names variable {id}, absent from the table"))?;
        }
        let aux = r.u32()?;
        let section = r.u32()?;
        let tile = r.u32()?;
        let has_tile = r.u8()? != 0;
        let stage = r.u32()?;
        records.push(Record {
            kind,
            id,
            aux,
            key: StageKey {
                section,
                tile: has_tile.then_some(tile),
                stage,
            },
            in_stage: r.u8()? != 0,
            event: r.u32()?,
            peer: r.u32()?,
            group: match r.u32()? {
                NONE => NONE,
                g => *groups
                    .get(&g)
                    .ok_or_else(|| format!("record names group {g}, absent from the table"))?,
            },
            traffic: Traffic {
                messages_sent: r.u32()?,
                messages_received: r.u32()?,
                bytes_sent: r.u64()?,
                bytes_received: r.u64()?,
                blocked_s: r.f64()?,
            },
            bytes: r.u64()?,
            begin_s: r.f64()?,
            end_s: r.f64()?,
            open: r.u32()?,
            close: r.u32()?,
            repeats: r.u32()?,
        });
    }
    let mut arrays = Vec::new();
    for _ in 0..r.len()? {
        arrays.push(ArrayInfo {
            name: r.str()?,
            bytes_per_row: r.u64()?,
            distributed: r.u8()? != 0,
            read_only: r.u8()? != 0,
        });
    }
    let calibration = match r.u8()? {
        0 => None,
        _ => Some(DiskCosts {
            read_overhead_s: r.f64()?,
            write_overhead_s: r.f64()?,
            async_overhead_s: r.f64()?,
            read_per_byte_s: r.f64()?,
            write_per_byte_s: r.f64()?,
        }),
    };
    if r.at != bytes.len() {
        return Err(format!(
            "{} bytes left over after the packed rank records",
            bytes.len() - r.at
        ));
    }
    Ok(RankRecords {
        records,
        arrays,
        calibration,
    })
}

struct Writer(Vec<u8>);

impl Writer {
    fn u32(&mut self, x: u32) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn u64(&mut self, x: u64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn f64(&mut self, x: f64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }
    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.0.extend_from_slice(s.as_bytes());
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| format!("packed rank records truncated at byte {}", self.at))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        Ok(self.take(N)?.try_into().expect("take returns N bytes"))
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        self.array().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Result<u64, String> {
        self.array().map(u64::from_le_bytes)
    }
    fn f64(&mut self) -> Result<f64, String> {
        self.array().map(f64::from_le_bytes)
    }
    fn len(&mut self) -> Result<usize, String> {
        let n = self.u64()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.bytes.len() - self.at)
            .ok_or_else(|| {
                format!(
                    "packed length {n} exceeds the {} bytes left",
                    self.bytes.len() - self.at
                )
            })
    }
    fn str(&mut self) -> Result<String, String> {
        let n = self.len()?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|e| format!("packed name: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn record(kind: RecordKind, id: u32, tile: Option<u32>, begin_s: f64) -> Record {
        Record {
            kind,
            id,
            aux: 2,
            key: StageKey {
                section: 1,
                tile,
                stage: 3,
            },
            in_stage: true,
            event: 7,
            peer: 2,
            group: NONE,
            traffic: Traffic {
                messages_sent: 1,
                messages_received: 2,
                bytes_sent: 300,
                bytes_received: 400,
                blocked_s: 0.25,
            },
            bytes: 4096,
            begin_s,
            end_s: begin_s + 0.5,
            open: 5,
            close: 9,
            repeats: 4,
        }
    }

    #[test]
    fn round_trip_shifts_times_and_keeps_everything_else() {
        let var = register_var("pack-test-array");
        let rr = RankRecords {
            records: vec![
                record(RecordKind::Stage, 4, Some(6), 1.0),
                record(RecordKind::Io, var.0, None, 2.0),
                record(RecordKind::Comm, 0, None, 3.0),
            ],
            arrays: vec![ArrayInfo {
                name: "pack-test-array".into(),
                bytes_per_row: 80,
                distributed: true,
                read_only: false,
            }],
            calibration: Some(DiskCosts {
                read_overhead_s: 1e-3,
                write_overhead_s: 2e-3,
                async_overhead_s: 3e-4,
                read_per_byte_s: 1e-9,
                write_per_byte_s: 2e-9,
            }),
        };
        let back = unpack(&pack(&rr, 10.0)).unwrap();
        assert_eq!(back.arrays, rr.arrays);
        assert_eq!(back.calibration, rr.calibration);
        assert_eq!(back.records.len(), 3);
        for (a, b) in rr.records.iter().zip(&back.records) {
            assert_eq!(b.begin_s, a.begin_s + 10.0);
            assert_eq!(b.end_s, a.end_s + 10.0);
            let shifted = Record {
                begin_s: a.begin_s + 10.0,
                end_s: a.end_s + 10.0,
                ..*a
            };
            assert_eq!(*b, shifted);
        }
    }

    #[test]
    fn io_variables_travel_by_name() {
        // A variable id unknown to this process's table is packed under the placeholder name
        // `varN` and comes back as whatever id this process gives that name.
        let mut io = record(RecordKind::Io, 999_999, None, 0.0);
        io.aux = 0;
        let rr = RankRecords {
            records: vec![io],
            ..RankRecords::default()
        };
        let back = unpack(&pack(&rr, 0.0)).unwrap();
        let id = back.records[0].id;
        assert_eq!(var_name(VarId(id)).as_deref(), Some("var999999"));
    }

    #[test]
    fn groups_travel_by_their_members() {
        // A group unknown to the table packs with no members; a known one comes back as the
        // id this process gives its members.
        let known = register_group(&[5, 7, 9]);
        let mut comm = record(RecordKind::Comm, 0, None, 0.0);
        comm.group = known.0;
        let mut unknown = comm;
        unknown.group = 999_999;
        let rr = RankRecords {
            records: vec![comm, unknown],
            ..RankRecords::default()
        };
        let back = unpack(&pack(&rr, 0.0)).unwrap();
        assert_eq!(back.records[0].group, known.0);
        assert_eq!(
            back.records[0].group_id().and_then(group_members),
            Some(vec![5, 7, 9])
        );
        assert_eq!(
            back.records[1].group_id().and_then(group_members),
            Some(vec![])
        );
    }

    #[test]
    fn damaged_input_is_an_error_not_a_panic() {
        let rr = RankRecords {
            records: vec![record(RecordKind::Event, 1, None, 0.0)],
            ..RankRecords::default()
        };
        let bytes = pack(&rr, 0.0);
        for cut in [0, 3, 8, 20, bytes.len() - 1] {
            assert!(unpack(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(unpack(&longer).unwrap_err().contains("left over"));
        let mut bad_group = bytes.clone();
        // Its group follows kind, id, aux, section, tile, tile flag, stage, in-stage flag,
        // event and peer.
        bad_group[32 + 31..32 + 35].copy_from_slice(&3u32.to_le_bytes());
        assert!(unpack(&bad_group).unwrap_err().contains("names group 3"));
        let mut bad_kind = bytes;
        // The first record's kind byte follows magic, version, two empty tables and the count.
        bad_kind[4 + 4 + 8 + 8 + 8] = 200;
        assert!(unpack(&bad_kind).unwrap_err().contains("kind 200"));
    }

    proptest! {
        #[test]
        fn any_records_round_trip(
            raw in proptest::collection::vec(
                (0..KINDS.len(), any::<u32>(), proptest::option::of(any::<u32>()), -1e6f64..1e6, any::<u64>()),
                0..40,
            ),
            offset in -100.0f64..100.0,
        ) {
            let records: Vec<Record> = raw
                .iter()
                .map(|&(k, id, tile, t, bytes)| {
                    let kind = KINDS[k];
                    let id = if kind.names_var() { register_var("pack-prop").0 } else { id };
                    Record { bytes, ..record(kind, id, tile, t) }
                })
                .collect();
            let rr = RankRecords { records, ..RankRecords::default() };
            let back = unpack(&pack(&rr, offset)).unwrap();
            prop_assert_eq!(back.records.len(), rr.records.len());
            for (a, b) in rr.records.iter().zip(&back.records) {
                prop_assert_eq!(b.begin_s, a.begin_s + offset);
                prop_assert_eq!(Record { begin_s: a.begin_s, end_s: a.end_s, ..*b }, *a);
            }
        }
    }
}
