//! The `[node]` table of a configuration: the node's own parameters
//! ([`NodeConfig`], from `nanopu-node`) and, beside them, the parameters of
//! the host-side devices NIC designs attach to a node (today the IceNIC's,
//! `[node.icenic]`). The node crate knows no NIC design (the designs depend
//! on it, not it on them), so it cannot hold a design's parameters; the
//! system, which knows both, owns the table and hands each part to its
//! owner: [`NodeTable::base`] to `Node::new`, [`NodeTable::icenic`] to the
//! IceNIC design (`IceNicPort::new`, which attaches its device with them).
//!
//! The file format is the one the node's table always had: `[node]` keys
//! and `[node.icenic]` in one table, with unknown keys refused and errors
//! naming the key's full path (`node.icenic.send_req_depth`).

use nanopu_nics::icenic::IceNicConfig;
use nanopu_node::NodeConfig;
use serde::de::{self, IntoDeserializer, MapAccess};
use serde::{Deserialize, Deserializer, Serialize};

/// The `[node]` table: the node's parameters (reached through `Deref`, as
/// `cfg.node.cores`), plus `[node.icenic]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeTable {
    /// The node's own parameters.
    pub base: NodeConfig,
    /// The traditional DMA NIC (IceNIC) of the paper's baseline: its
    /// device's parameters, for `[nic] kind = "icenic"`
    /// (`nanopu_nics::icenic::params`).
    pub icenic: IceNicConfig,
}

impl std::ops::Deref for NodeTable {
    type Target = NodeConfig;
    fn deref(&self) -> &NodeConfig {
        &self.base
    }
}

impl std::ops::DerefMut for NodeTable {
    fn deref_mut(&mut self) -> &mut NodeConfig {
        &mut self.base
    }
}

impl From<NodeConfig> for NodeTable {
    fn from(base: NodeConfig) -> NodeTable {
        NodeTable {
            base,
            icenic: IceNicConfig::default(),
        }
    }
}

impl Serialize for NodeTable {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Table<'a> {
            #[serde(flatten)]
            base: &'a NodeConfig,
            icenic: &'a IceNicConfig,
        }
        Table {
            base: &self.base,
            icenic: &self.icenic,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for NodeTable {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<NodeTable, D::Error> {
        d.deserialize_map(TableVisitor)
    }
}

struct TableVisitor;

impl<'de> de::Visitor<'de> for TableVisitor {
    type Value = NodeTable;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("the [node] table")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<NodeTable, A::Error> {
        // The node's keys go to `NodeConfig`'s own deserializer entry by
        // entry, through the same map (so a key's error keeps its path and
        // an unknown key is refused as before); `icenic` is taken aside.
        let mut icenic = None;
        let base = NodeConfig::deserialize(de::value::MapAccessDeserializer::new(Without {
            map,
            icenic: &mut icenic,
        }))?;
        Ok(NodeTable {
            base,
            icenic: icenic.unwrap_or_default(),
        })
    }
}

/// A map without its `icenic` entry, which it deserializes into `icenic`.
struct Without<'a, A> {
    map: A,
    icenic: &'a mut Option<IceNicConfig>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Without<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key::<String>()? else {
                return Ok(None);
            };
            if key == "icenic" {
                if self.icenic.is_some() {
                    return Err(de::Error::duplicate_field("icenic"));
                }
                *self.icenic = Some(self.map.next_value()?);
                continue;
            }
            let key: de::value::StringDeserializer<A::Error> = key.into_deserializer();
            return seed.deserialize(key).map(Some);
        }
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_round_trips_with_its_icenic_part() {
        let t = NodeTable {
            base: NodeConfig {
                cores: 2,
                ..NodeConfig::default()
            },
            icenic: IceNicConfig {
                send_req_depth: 7,
                ..IceNicConfig::default()
            },
        };
        let text = toml::to_string(&t).unwrap();
        assert!(text.contains("[icenic]"), "{text}");
        let back: NodeTable = toml::from_str(&text).unwrap();
        assert_eq!(back, t);
        let v = serde_json::to_value(&t).unwrap();
        assert_eq!(v["icenic"]["send_req_depth"], 7);
        assert_eq!(serde_json::from_value::<NodeTable>(v).unwrap(), t);
    }

    #[test]
    fn unknown_keys_are_refused_in_both_parts() {
        let e = toml::from_str::<NodeTable>("bogus = 1\n").unwrap_err();
        assert!(e.message().contains("unknown field `bogus`"), "{e}");
        let e = toml::from_str::<NodeTable>("[icenic]\nbogus = 1\n").unwrap_err();
        assert!(e.message().contains("unknown field `bogus`"), "{e}");
    }
}
