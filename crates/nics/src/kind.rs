//! Which NIC design a node has (`[nic] kind`, `--nic`, Python's `nic=`):
//! one parser ([`NicKind::from_str`]) for every place a name is read, so
//! each says the same thing about a name it does not know.

use crate::nebula::NebulaDesign;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// A NIC design (`[nic] kind`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NicKind {
    /// The nanoPU NIC: the fast path into the register file.
    #[default]
    Nanopu,
    /// A traditional DMA NIC (IceNIC-like).
    Icenic,
    /// An RDMA NIC (ConnectX-3-like) behind PCIe: queue pairs, one-sided
    /// and messaging verbs (`nanopu_nics::rdma`).
    Rdma,
    /// NEBULA's integrated NIC as one of the designs NEBULA §VI compares
    /// (`nanopu_nics::nebula`): `nebula` is NEBULA itself, `nebula:RSS`,
    /// `nebula:RPCValet`, `nebula:SRQ_emu` and `nebula:NEBULA_base` the
    /// others. Its programs use the NIC's queues (`sdk/include/nebula.h`).
    Nebula(NebulaDesign),
}

/// The names [`NicKind::from_str`] takes, as its errors list them.
pub const NIC_NAMES: &str = "nanopu, icenic (or traditional), rdma, nebula (NEBULA itself, also \
     nebula:NEBULA), nebula:NEBULA_base, nebula:RSS, nebula:RPCValet, nebula:SRQ_emu";

/// A name that is no NIC design.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown NIC design {name:?}: the designs are {NIC_NAMES}")]
pub struct UnknownNic {
    pub name: String,
}

impl NicKind {
    /// Every design, NEBULA's in the order of NEBULA §VI.
    pub fn all() -> impl Iterator<Item = NicKind> {
        [NicKind::Nanopu, NicKind::Icenic, NicKind::Rdma]
            .into_iter()
            .chain(NebulaDesign::ALL.into_iter().map(NicKind::Nebula))
    }

    /// The design's family: `nanopu`, `icenic`, `rdma` or `nebula` (see
    /// `Display` for the full name).
    pub fn name(self) -> &'static str {
        match self {
            NicKind::Nanopu => "nanopu",
            NicKind::Icenic => "icenic",
            NicKind::Rdma => "rdma",
            NicKind::Nebula(_) => "nebula",
        }
    }

    /// NEBULA's design, if the NIC is NEBULA's.
    pub fn nebula(self) -> Option<NebulaDesign> {
        match self {
            NicKind::Nebula(d) => Some(d),
            _ => None,
        }
    }
}

/// Case and `-`/`_` do not matter (`NEBULA_base`, `nebula-base`).
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes().zip(b.bytes()).all(|(x, y)| {
            let norm = |c: u8| {
                if c == b'-' {
                    b'_'
                } else {
                    c.to_ascii_lowercase()
                }
            };
            norm(x) == norm(y)
        })
}

impl FromStr for NicKind {
    type Err = UnknownNic;

    fn from_str(s: &str) -> Result<NicKind, UnknownNic> {
        let t = s.trim();
        let unknown = || UnknownNic { name: s.into() };
        for (name, kind) in [
            ("nanopu", NicKind::Nanopu),
            ("nano-pu", NicKind::Nanopu),
            ("icenic", NicKind::Icenic),
            ("traditional", NicKind::Icenic),
            ("rdma", NicKind::Rdma),
            ("nebula", NicKind::Nebula(NebulaDesign::Nebula)),
        ] {
            if same(t, name) {
                return Ok(kind);
            }
        }
        let (family, design) = t.split_once(':').ok_or_else(unknown)?;
        if !same(family.trim(), "nebula") {
            return Err(unknown());
        }
        NebulaDesign::ALL
            .into_iter()
            .find(|d| same(design.trim(), d.name()))
            .map(NicKind::Nebula)
            .ok_or_else(unknown)
    }
}

impl fmt::Display for NicKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NicKind::Nebula(NebulaDesign::Nebula) => f.write_str("nebula"),
            NicKind::Nebula(d) => write!(f, "nebula:{}", d.name()),
            k => f.write_str(k.name()),
        }
    }
}

impl Serialize for NicKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for NicKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<NicKind, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_design_reads_back_its_own_name() {
        for k in NicKind::all() {
            assert_eq!(k.to_string().parse::<NicKind>(), Ok(k), "{k}");
            let toml = toml::to_string(&std::collections::BTreeMap::from([("kind", k)])).unwrap();
            let back: std::collections::BTreeMap<String, NicKind> = toml::from_str(&toml).unwrap();
            assert_eq!(back["kind"], k);
        }
        assert_eq!(NicKind::all().count(), 8);
    }

    #[test]
    fn names_are_read_whatever_their_case_and_dashes() {
        let k = |s: &str| s.parse::<NicKind>().unwrap();
        assert_eq!(k("traditional"), NicKind::Icenic);
        assert_eq!(k("NEBULA"), NicKind::Nebula(NebulaDesign::Nebula));
        assert_eq!(
            k("nebula:nebula-base"),
            NicKind::Nebula(NebulaDesign::NebulaBase)
        );
        assert_eq!(k("nebula:srq-emu"), NicKind::Nebula(NebulaDesign::SrqEmu));
        assert_eq!(
            k("Nebula:RPCValet"),
            NicKind::Nebula(NebulaDesign::RpcValet)
        );
    }

    #[test]
    fn an_unknown_name_lists_the_designs() {
        for bad in ["", "rss", "nebula:", "nebula:jbsq", "icenic:RSS", "nanopu2"] {
            let e = bad.parse::<NicKind>().unwrap_err().to_string();
            assert!(e.starts_with(&format!("unknown NIC design {bad:?}")), "{e}");
            assert!(e.contains(NIC_NAMES), "{e}");
        }
        let e = toml::from_str::<std::collections::BTreeMap<String, NicKind>>("kind = \"x\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown NIC design \"x\": the designs are nanopu"),
            "{e}"
        );
    }
}
